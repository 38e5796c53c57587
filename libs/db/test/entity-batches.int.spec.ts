/**
 * runTest's batch reads (entityBatchAfter, entityBatchOf): each entity once, in urn order, with the latest version of
 * each aspect, as one JSON text in the shape the evaluation threads read (EntitySnapshot), the urns and types beside
 * it; the walk by `afterUrn` visits every entity of the types asked for exactly once, in one statement per batch.
 */
import pg from "pg";
import { entityBatchAfter, entityBatchOf } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

const dataset = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,t${String(i).padStart(2, "0")},PROD)`;

describe("runTest's entity batches", () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase("entity_batches");
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const insert = (urn: string, aspect: string, version: number, entityType: string, value: unknown) =>
      pool.query(
        `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by) VALUES ($1, $2, $3, $4, $5, 'test')`,
        [urn, aspect, version, entityType, JSON.stringify(value)],
      );
    for (let i = 9; i >= 0; i--) {
      await insert(dataset(i), "status", 1, "dataset", { removed: true });
      await insert(dataset(i), "status", 2, "dataset", { removed: false }); // the latest version is the one read
      await insert(dataset(i), "globalTags", 1, "dataset", { tags: [{ tag: `urn:li:tag:t${i}` }] });
    }
    await insert("urn:li:corpuser:ann", "corpUserInfo", 1, "corpuser", { active: true }); // another type: never read
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("walks every entity of the types once, in urn order, each with the latest version of each aspect", async () => {
    const seen: string[] = [];
    let after = "";
    let statements = 0;
    const counting = { query: (...args: Parameters<pg.Pool["query"]>) => (statements++, pool.query(...args)) };
    for (;;) {
      const batch = await entityBatchAfter(counting as unknown as pg.Pool, ["dataset"], after, 4);
      if (batch.urns.length === 0) break;
      const entities = JSON.parse(batch.json) as Array<{ urn: string; entityType: string; aspects: object }>;
      expect(entities.map((e) => e.urn)).toEqual(batch.urns);
      expect(batch.entityTypes).toEqual(batch.urns.map(() => "dataset"));
      for (const [k, e] of entities.entries()) {
        const i = Number(/t(\d+),/.exec(e.urn)![1]);
        expect(e).toEqual({
          urn: batch.urns[k],
          entityType: "dataset",
          aspects: { status: { removed: false }, globalTags: { tags: [{ tag: `urn:li:tag:t${i}` }] } },
        });
      }
      seen.push(...batch.urns);
      after = batch.urns.at(-1)!;
    }
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => dataset(i)));
    expect(statements).toBe(4); // batches of 4, 4 and 2, then the empty one: one statement each
  });

  it("reads named entities the same way, leaving out those with nothing stored", async () => {
    const batch = await entityBatchOf(pool, [dataset(3), "urn:li:dataset:(urn:li:dataPlatform:hive,gone,PROD)"]);
    expect(batch.urns).toEqual([dataset(3)]);
    expect(JSON.parse(batch.json)).toEqual([
      {
        urn: dataset(3),
        entityType: "dataset",
        aspects: { status: { removed: false }, globalTags: { tags: [{ tag: "urn:li:tag:t3" }] } },
      },
    ]);
    expect(await entityBatchOf(pool, [])).toEqual({ urns: [], entityTypes: [], json: "[]" });
  });

  it("brings the versions of one aspect's latest values beside the batch when asked (runTest's push builds on them)", async () => {
    const gone = "urn:li:dataset:(urn:li:dataPlatform:hive,gone,PROD)";
    const batch = await entityBatchOf(pool, [dataset(4), dataset(5), gone], { aspectName: "globalTags", testUrns: [] });
    expect(batch.urns).toEqual([dataset(4), dataset(5)]);
    expect(JSON.parse(batch.versions!)).toEqual({ [dataset(4)]: 1, [dataset(5)]: 1 });
    // The status aspect's latest version (its values are the entities' own aspects, the latest of each).
    const status = await entityBatchOf(pool, [dataset(4)], { aspectName: "status", testUrns: [] });
    expect(JSON.parse(status.versions!)).toEqual({ [dataset(4)]: 2 });
    expect(JSON.parse(status.json)[0].aspects.status).toEqual({ removed: false });
    const none = await entityBatchOf(pool, [dataset(4)], { aspectName: "testResults", testUrns: [] });
    expect([none.versions, none.onTypes]).toEqual(["{}", "{}"]);
    const empty = await entityBatchOf(pool, [], { aspectName: "testResults", testUrns: [] });
    expect([empty.versions, empty.onTypes]).toEqual(["{}", "{}"]);
  });

  it("brings what the tests named in stored results, and those asked for, select now: the push's merge needs no read", async () => {
    const test = (name: string, onTypes: string[]) =>
      pool.query(
        `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn, updated_at)
         VALUES ($1, $1::text, 'c', '{}', '{}', $2, 'test', 'test', now())`,
        [`urn:li:test:${name}`, onTypes],
      );
    await test("stored", ["dataset", "chart"]);
    await test("asked", ["dataset"]);
    await test("unrelated", ["dataset"]);
    const results = (urn: string, value: unknown) =>
      pool.query(
        `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by) VALUES ($1, 'testResults', 1, 'dataset', $2, 'test')`,
        [urn, JSON.stringify(value)],
      );
    // Entries written by anything: a deleted test, a test that is not a string, lists that are not lists.
    await results(dataset(6), {
      passing: [{ test: "urn:li:test:stored" }, { test: 7 }, "x"],
      failing: [{ test: "urn:li:test:deleted" }],
    });
    await results(dataset(7), { passing: "none", failing: null });
    await results(dataset(8), ["not", "an", "object"]);
    const batch = await entityBatchOf(pool, [dataset(6), dataset(7), dataset(8), dataset(9)], {
      aspectName: "testResults",
      testUrns: ["urn:li:test:asked"],
    });
    expect(batch.urns).toHaveLength(4);
    expect(JSON.parse(batch.onTypes!)).toEqual({
      "urn:li:test:stored": ["dataset", "chart"],
      "urn:li:test:asked": ["dataset"],
    });
  });
});
