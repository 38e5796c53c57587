/**
 * Pushing results (real PostgreSQL): two requests for one entity that land in the same job both keep their results.
 * The concurrent case across jobs is covered through the gateway in services/gateway/test/metadata-tests-pushes.int.spec.ts.
 */
import { AspectRepository, createDatabase, entityBatchOf, inTransaction, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type { Privilege } from "@mdp/core";
import type { EntitySnapshot } from "@mdp/metadata-tests";
import { mergeBatch } from "../src/batch-push";
import { ResultsPusher, TEST_RESULTS_ASPECT } from "../src/results.pusher";

const URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)";
const ACTOR = "urn:li:corpuser:admin";

describe("ResultsPusher", () => {
  let db: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    db = await createTestDatabase("results_pusher");
    database = createDatabase(db.url);
    // Results stand only for tests that exist and select the entity's type.
    await database.pool.query(
      `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn, updated_at)
       SELECT urn, urn, 'x', '{}', '{}', ARRAY['dataset'], $2, $2, now() FROM unnest($1::text[]) AS urn`,
      [["urn:li:test:a", "urn:li:test:b"], ACTOR],
    );
  });
  afterAll(async () => {
    await database.close();
    await db.drop();
  });

  it("keeps the results of every request for one entity pushed in the same job", async () => {
    const item = (test: string) => ({
      entityType: "dataset",
      actorUrn: ACTOR,
      evaluated: new Set([test]),
      evaluation: {
        urn: URN,
        passing: [{ test, type: "SUCCESS" as const }],
        failing: [],
        notApplicable: [],
        evaluatedAt: 1,
      },
    });
    const aspects = new AspectRepository();
    // None of these tests has actions: pushing their results reads no one's grants.
    const pusher = new ResultsPusher(aspects, () =>
      Promise.reject(new Error("grants read for a push without actions")),
    );
    await inTransaction(database.pool, (client) => pusher.push(client, [item("urn:li:test:a"), item("urn:li:test:b")]));
    const stored = await aspects.latestOfEach(database.pool, TEST_RESULTS_ASPECT, [URN]);
    expect(stored.get(URN)).toEqual({
      passing: [
        { test: "urn:li:test:a", type: "SUCCESS" },
        { test: "urn:li:test:b", type: "SUCCESS" },
      ],
      failing: [],
    });
  });

  it("writes a batch its thread merged onto what runTest read under the locks, reading and locking nothing again", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.locked,PROD)";
    const evaluation = (test: string, passing: boolean) => ({
      urn,
      passing: passing ? [{ test, type: "SUCCESS" as const }] : [],
      failing: passing ? [] : [{ test, type: "FAILURE" as const, failedRules: [] }],
      notApplicable: [],
      evaluatedAt: 1,
    });
    const aspects = new AspectRepository();
    const pusher = new ResultsPusher(aspects, () => Promise.reject(new Error("no actions here")));
    await inTransaction(database.pool, (client) =>
      pusher.push(client, [
        {
          entityType: "dataset",
          actorUrn: ACTOR,
          evaluated: new Set(["urn:li:test:a"]),
          evaluation: evaluation("urn:li:test:a", true),
        },
      ]),
    );
    // As runTest does: lock, read the batch (stored results, versions, on.types), merge in the thread, then write.
    const sent: string[] = [];
    const pushed = await inTransaction(database.pool, async (client) => {
      await pusher.lock(client, [urn]);
      const batch = await entityBatchOf(client, [urn], {
        aspectName: TEST_RESULTS_ASPECT,
        testUrns: ["urn:li:test:b"],
      });
      const entities = new Map((JSON.parse(batch.json) as EntitySnapshot[]).map((e) => [e.urn, e]));
      const merged = mergeBatch(
        [evaluation("urn:li:test:b", false)],
        (u) => entities.get(u)!,
        new Set(["urn:li:test:b"]),
        { onTypes: batch.onTypes! },
        [],
      );
      const counting = Object.create(client) as typeof client;
      counting.query = ((text: string, ...rest: unknown[]) => {
        sent.push(text);
        return (client.query as (...a: unknown[]) => unknown)(text, ...rest);
      }) as typeof client.query;
      const versions = new Map(Object.entries(JSON.parse(batch.versions!) as Record<string, number>));
      return pusher.pushMerged(counting, merged, { actorUrn: ACTOR }, versions, 1);
    });
    expect(pushed).toBe(1);
    // No lock of its own (nor the upsert's), no read of what is stored or of the tests: the write and the history.
    expect(sent).toHaveLength(2);
    expect(sent.filter((q) => /pg_advisory_xact_lock|SELECT DISTINCT ON|metadata_test/.test(q))).toEqual([]);
    expect((await aspects.latestOfEach(database.pool, TEST_RESULTS_ASPECT, [urn])).get(urn)).toEqual({
      passing: [{ test: "urn:li:test:a", type: "SUCCESS" }],
      failing: [{ test: "urn:li:test:b", type: "FAILURE", failedRules: [] }],
    });
  });

  it("runs each test's actions as far as its owner (and the caller) may, reading each one's grants once per push", async () => {
    const tagOwn = {
      failing: [
        { type: "ADD_TAGS", params: { values: ["urn:li:tag:t"] } },
        { type: "ADD_OWNERS", params: { values: ["urn:li:corpuser:steward"] } },
      ],
    };
    const owners: Record<string, string> = {
      "urn:li:test:ann-1": "urn:li:corpuser:ann",
      "urn:li:test:ann-2": "urn:li:corpuser:ann",
      "urn:li:test:bob": "urn:li:corpuser:bob",
    };
    await database.pool.query(
      `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn, updated_at)
       SELECT t.urn, t.urn, 'x', '{}', jsonb_build_object('actions', $3::jsonb), ARRAY['dataset'], t.owner, t.owner, now()
         FROM unnest($1::text[], $2::text[]) AS t(urn, owner)`,
      [Object.keys(owners), Object.values(owners), JSON.stringify(tagOwn)],
    );
    const held: Record<string, Privilege[]> = {
      "urn:li:corpuser:ann": ["EDIT_ENTITY_TAGS"],
      "urn:li:corpuser:bob": ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"],
      // The push's caller, who owns none of the tests: what it holds bounds them too (here, nothing less).
      [ACTOR]: ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"],
    };
    const reads: string[] = [];
    const pusher = new ResultsPusher(new AspectRepository(), ({ urn }) => {
      reads.push(urn);
      return Promise.resolve(new Set(held[urn] ?? []));
    });
    const entity = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.${name},PROD)`;
    const item = (urn: string, tests: string[]) => ({
      entityType: "dataset",
      actorUrn: ACTOR,
      evaluated: new Set(tests),
      evaluation: {
        urn,
        passing: [],
        failing: tests.map((test) => ({ test, type: "FAILURE" as const, failedRules: [] })),
        notApplicable: [],
        evaluatedAt: 1,
      },
    });
    await inTransaction(database.pool, (client) =>
      pusher.push(client, [
        item(entity("one"), ["urn:li:test:ann-1", "urn:li:test:bob"]),
        item(entity("two"), ["urn:li:test:ann-1", "urn:li:test:ann-2"]),
      ]),
    );
    expect(reads.sort()).toEqual([ACTOR, "urn:li:corpuser:ann", "urn:li:corpuser:bob"].sort());
    const latest = async (urn: string, aspect: string) =>
      (await new AspectRepository().latestOfEach(database.pool, aspect, [urn])).get(urn);
    // Bob's test added the steward to entity one; Ann's tests tagged both and added no owner to entity two.
    expect(await latest(entity("one"), "ownership")).toMatchObject({ owners: [{ owner: "urn:li:corpuser:steward" }] });
    expect(await latest(entity("two"), "ownership")).toBeUndefined();
    expect(await latest(entity("two"), "globalTags")).toEqual({ tags: [{ tag: "urn:li:tag:t" }] });
    const { rows } = await database.pool.query<{ target_urn: string; details: Record<string, unknown> }>(
      "SELECT target_urn, details FROM audit_event WHERE action = 'test.actions.refused' ORDER BY target_urn",
    );
    // Ann's first test would have added the steward to both entities: one row, two entities. Her second would add the
    // same steward after it, changing nothing more: no row (as a re-run of an allowed action leaves none).
    expect(rows).toEqual([
      {
        target_urn: "urn:li:test:ann-1",
        details: {
          owner: "urn:li:corpuser:ann",
          missingPrivileges: ["EDIT_ENTITY_OWNERS"],
          actions: ["ADD_OWNERS"],
          entities: 2,
          via: "test-action",
        },
      },
    ]);
  });
});
