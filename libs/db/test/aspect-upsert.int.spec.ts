/**
 * AspectRepository.upsert against real PostgreSQL: a batch's values travel as one JSON array of their texts, so each
 * version must get exactly its own write's value, whatever the text holds (quotes, backslashes, escapes, nesting,
 * whitespace), and several versions of one aspect in a batch apply in order. `lock` takes each aspect's advisory lock
 * on the same key text as every version before it did (a worker of the last release and one of this release, side by
 * side during a deploy, must lock one aspect alike).
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { AspectRepository, inTransaction } from "../src";

const aspects = new AspectRepository();

describe("AspectRepository.upsert", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("aspect_upsert");
    db = createDatabase(testDb.url, { poolMax: 2 });
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("stores each write's value with its own urn and version, whatever its text", async () => {
    const values: string[] = [
      JSON.stringify({ description: 'a "quoted", comma\'d, {braced} [bracketed] text' }),
      JSON.stringify({ path: "C:\\dir\\file", newline: "one\ntwo", tab: "\t", unicode: "é ✓ \u2028" }),
      '  {"spaced" : [1, 2, {"nested": [true, null]}] }\n',
      '{"escaped":"\\u0041\\"\\\\"}',
      JSON.stringify({ list: [[], {}, [[["deep"]]]], number: -1.5e3 }),
    ];
    const writes = values.map((valueJson, i) => ({
      urn: `urn:li:dataset:v${i}`,
      entityType: "dataset",
      aspectName: "datasetProperties",
      valueJson,
    }));
    await inTransaction(db.pool, (client) => aspects.upsert(client, writes, "urn:li:corpuser:w"));
    const { rows } = await db.pool.query<{ urn: string; version: number; value: unknown }>(
      "SELECT urn, version, value FROM aspect WHERE urn LIKE 'urn:li:dataset:v%' ORDER BY urn",
    );
    expect(rows).toEqual(values.map((v, i) => ({ urn: `urn:li:dataset:v${i}`, version: 1, value: JSON.parse(v) })));
  });

  it("applies several versions of one aspect in a batch in order, each with its own value", async () => {
    const write = (urn: string, n: number) => ({
      urn,
      entityType: "dataset",
      aspectName: "datasetProperties",
      valueJson: JSON.stringify({ n }),
    });
    await inTransaction(db.pool, (client) =>
      aspects.upsert(client, [write("urn:li:dataset:o", 0)], "urn:li:corpuser:w"),
    );
    await inTransaction(db.pool, (client) =>
      aspects.upsert(
        client,
        [write("urn:li:dataset:o", 1), write("urn:li:dataset:p", 1), write("urn:li:dataset:o", 2)],
        "urn:li:corpuser:w",
      ),
    );
    const { rows } = await db.pool.query<{ urn: string; version: number; value: unknown }>(
      "SELECT urn, version, value FROM aspect WHERE urn IN ('urn:li:dataset:o', 'urn:li:dataset:p') ORDER BY urn, version",
    );
    expect(rows).toEqual([
      { urn: "urn:li:dataset:o", version: 1, value: { n: 0 } },
      { urn: "urn:li:dataset:o", version: 2, value: { n: 1 } },
      { urn: "urn:li:dataset:o", version: 3, value: { n: 2 } },
      { urn: "urn:li:dataset:p", version: 1, value: { n: 1 } },
    ]);
  });

  it("splits a batch past the value text one statement may send, with the same versions as one statement", async () => {
    const write = (urn: string, n: number, currentVersion?: number) => ({
      urn,
      entityType: "dataset",
      aspectName: "datasetProperties",
      valueJson: JSON.stringify({ n }),
      ...(currentVersion === undefined ? {} : { currentVersion }),
    });
    const versions = async (urn: string) =>
      (
        await db.pool.query<{ version: number; value: { n: number } }>(
          "SELECT version, value FROM aspect WHERE urn = $1 ORDER BY version",
          [urn],
        )
      ).rows.map((r) => [r.version, r.value.n]);
    const limit = AspectRepository.maxValueTextPerStatement;
    AspectRepository.maxValueTextPerStatement = 10; // every write its own statement
    try {
      // Looked up: each statement's lookup sees the versions of the batch's earlier ones.
      await inTransaction(db.pool, (client) =>
        aspects.upsert(
          client,
          [1, 2, 3].map((n) => write("urn:li:dataset:split", n)),
          "urn:li:corpuser:w",
        ),
      );
      expect(await versions("urn:li:dataset:split")).toEqual([
        [1, 1],
        [2, 2],
        [3, 3],
      ]);
      // Read under the lock by the caller (version 3): counted over the whole batch.
      await inTransaction(db.pool, (client) =>
        aspects.upsert(
          client,
          [4, 5].map((n) => write("urn:li:dataset:split", n, 3)),
          "urn:li:corpuser:w",
        ),
      );
      expect((await versions("urn:li:dataset:split")).slice(3)).toEqual([
        [4, 4],
        [5, 5],
      ]);
    } finally {
      AspectRepository.maxValueTextPerStatement = limit;
    }
  });

  it("takes a write's currentVersion as the aspect's latest (read under its lock), looking up only the others", async () => {
    const write = (urn: string, n: number, currentVersion?: number) => ({
      urn,
      entityType: "dataset",
      aspectName: "status",
      valueJson: JSON.stringify({ n }),
      ...(currentVersion !== undefined && { currentVersion }),
    });
    await inTransaction(db.pool, (client) =>
      aspects.upsert(client, [write("urn:li:dataset:k", 0), write("urn:li:dataset:u", 0)], "urn:li:corpuser:w"),
    );
    await inTransaction(db.pool, async (client) => {
      await aspects.lock(client, [{ urn: "urn:li:dataset:k", aspectName: "status" }]);
      await aspects.upsert(
        client,
        // k's latest as its caller read it (1), twice; u's looked up; a new aspect's 0.
        [write("urn:li:dataset:k", 1, 1), write("urn:li:dataset:u", 1), write("urn:li:dataset:k", 2, 1)].concat(
          write("urn:li:dataset:new", 1, 0),
        ),
        "urn:li:corpuser:w",
      );
    });
    const { rows } = await db.pool.query<{ urn: string; version: number; value: unknown }>(
      `SELECT urn, version, value FROM aspect WHERE aspect_name = 'status' ORDER BY urn, version`,
    );
    expect(rows).toEqual([
      { urn: "urn:li:dataset:k", version: 1, value: { n: 0 } },
      { urn: "urn:li:dataset:k", version: 2, value: { n: 1 } },
      { urn: "urn:li:dataset:k", version: 3, value: { n: 2 } },
      { urn: "urn:li:dataset:new", version: 1, value: { n: 1 } },
      { urn: "urn:li:dataset:u", version: 1, value: { n: 0 } },
      { urn: "urn:li:dataset:u", version: 2, value: { n: 1 } },
    ]);
    // The version it was given is the one it builds on: a (wrong) 7 makes 8, so it was not looked up.
    await inTransaction(db.pool, (client) =>
      aspects.upsert(client, [write("urn:li:dataset:u", 9, 7)], "urn:li:corpuser:w"),
    );
    const { rows: latest } = await db.pool.query<{ version: number }>(
      `SELECT max(version) AS version FROM aspect WHERE urn = 'urn:li:dataset:u' AND aspect_name = 'status'`,
    );
    expect(latest[0]!.version).toBe(8);
  });

  it("locks each (urn, aspect) on hashtext of its JSON [urn, aspectName], whatever the urn holds", async () => {
    const wanted = [
      { urn: 'urn:li:dataset:(urn:li:dataPlatform:hive,db."quoted"\\name,PROD)', aspectName: "testResults" },
      { urn: "urn:li:dataset:plain", aspectName: "globalTags" },
      { urn: "urn:li:dataset:plain", aspectName: "globalTags" },
    ];
    const held = await inTransaction(db.pool, async (client) => {
      await aspects.lock(client, wanted);
      // A bigint advisory lock shows as its high (classid) and low (objid) 32 bits.
      const { rows } = await client.query<{ key: string }>(
        `SELECT ((classid::int8 << 32) | objid::int8)::text AS key FROM pg_locks
          WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted ORDER BY 1`,
      );
      return rows.map((r) => r.key);
    });
    const { rows } = await db.pool.query<{ key: string }>(
      "SELECT hashtext(k)::int8::text AS key FROM unnest($1::text[]) AS k ORDER BY 1",
      [[...new Set(wanted.map((w) => JSON.stringify([w.urn, w.aspectName])))]],
    );
    expect(held).toEqual(rows.map((r) => r.key));
  });
});
