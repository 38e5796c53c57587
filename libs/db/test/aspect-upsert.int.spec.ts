/**
 * AspectRepository.upsert's values travel as one JSON array of strings (not a text[]): each value lands on its own
 * write, in order, whatever it holds (quotes, backslashes, non-ASCII, nesting), and several versions of one aspect in
 * one call number up in order.
 */
import pg from "pg";
import { AspectRepository, inTransaction } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

describe("AspectRepository.upsert", () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase("aspect_upsert");
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("writes each value to its own write, in order", async () => {
    const a = "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)";
    const b = "urn:li:dataset:(urn:li:dataPlatform:hive,b,PROD)";
    const values = [
      { description: 'say "hi", \\ then {[,]}' },
      { description: "ünïcødé ✓ \u0001 tab\tnewline\n" },
      { nested: { list: [1, "two", null, { three: true }] } },
      { description: "second version of a" },
    ];
    const urns = [a, b, b, a];
    await inTransaction(pool, (client) =>
      new AspectRepository().upsert(
        client,
        values.map((value, i) => ({
          urn: urns[i]!,
          entityType: "dataset",
          aspectName: i === 2 ? "globalTags" : "datasetProperties",
          valueJson: JSON.stringify(value),
        })),
        "urn:li:corpuser:test",
      ),
    );
    const { rows } = await pool.query<{ urn: string; aspect_name: string; version: number; value: unknown }>(
      "SELECT urn, aspect_name, version, value FROM aspect ORDER BY urn, aspect_name, version",
    );
    expect(rows).toEqual([
      { urn: a, aspect_name: "datasetProperties", version: 1, value: values[0] },
      { urn: a, aspect_name: "datasetProperties", version: 2, value: values[3] },
      { urn: b, aspect_name: "datasetProperties", version: 1, value: values[1] },
      { urn: b, aspect_name: "globalTags", version: 1, value: values[2] },
    ]);
  });
});
