/**
 * A runTest batch and an evaluate push of the same entity (real PostgreSQL). The batch reads its entities, evaluates
 * them and pushes; an evaluate of the entity made after the batch read it is fresher and must not be overwritten by
 * the batch's older result. The batch takes the testResults locks before it reads (lock before read, as
 * run-test.processor.ts does through nextBatch's lockFor), so the evaluate push waits and lands on top: through
 * nextEntities and the pusher's own push, and through runTest's path (nextBatch, the thread's merge, pushMerged). The
 * last case holds the old order (read, then lock at push) open and shows the fresher result lost: what locking first
 * prevents.
 */
import { AspectRepository, createDatabase, inTransaction, ownerPrivilegesReader, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { eventually } from "@mdp/core/testing";
import { EvaluationLifecycle } from "@mdp/tasks";
import type { EntitySnapshot } from "@mdp/metadata-tests";
import type { PoolClient } from "pg";
import { mergeBatch } from "../src/batch-push";
import { EvaluationStore } from "../src/evaluation.store";
import { ResultsPusher, TEST_RESULTS_ASPECT } from "../src/results.pusher";

const URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.race,PROD)";
const TEST = "urn:li:test:owned";
const ACTOR = "urn:li:corpuser:admin";

describe("runTest batch against a concurrent evaluate push", () => {
  let testDb: TestDatabase;
  let db: Database;
  const aspects = new AspectRepository();
  let pusher: ResultsPusher;
  let store: EvaluationStore;

  beforeAll(async () => {
    testDb = await createTestDatabase("run_test_race");
    db = createDatabase(testDb.url);
    pusher = new ResultsPusher(aspects, ownerPrivilegesReader(db.prisma, ACTOR));
    store = new EvaluationStore(db.pool, new EvaluationLifecycle(db.pool, { owner: "test", leaseMs: 10_000 }));
    await db.pool.query(
      `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn, updated_at)
       VALUES ($1, 'owned', 'x', '{}', '{}', ARRAY['dataset'], $2, $2, now())`,
      [TEST, ACTOR],
    );
    await db.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, 'ownership', 1, 'dataset', '{"owners": []}', $2)`,
      [URN, ACTOR],
    );
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  const item = (passing: boolean, at: number) => ({
    entityType: "dataset",
    actorUrn: ACTOR,
    evaluated: new Set([TEST]),
    evaluation: {
      urn: URN,
      passing: passing ? [{ test: TEST, type: "SUCCESS" as const }] : [],
      failing: passing ? [] : [{ test: TEST, type: "FAILURE" as const, failedRules: [] }],
      notApplicable: [],
      evaluatedAt: at,
    },
  });
  const stored = async () => (await aspects.latestOfEach(db.pool, TEST_RESULTS_ASPECT, [URN])).get(URN);

  /**
   * The batch reads (`read`, with or without taking the locks first), then, while it "evaluates", an evaluate push of
   * a fresher evaluation (the entity got an owner: passing) is started; then the batch pushes its stale (failing)
   * result (what `read` answered) and commits. Returns what is stored once both are done.
   */
  const race = async (read: (client: PoolClient) => Promise<() => Promise<unknown>>) => {
    await db.pool.query("DELETE FROM aspect WHERE aspect_name = $1", [TEST_RESULTS_ASPECT]);
    let fresher: Promise<unknown> | undefined;
    await inTransaction(db.pool, async (client) => {
      const pushStale = await read(client);
      let settled = false;
      fresher = inTransaction(db.pool, (other) => pusher.push(other, [item(true, 2)])).finally(() => {
        settled = true;
      });
      // Until the push has committed (unblocked: the old order) or is waiting on the batch's lock (the new one).
      await eventually("the evaluate push committed or waiting on a lock", async () => {
        if (settled) return true;
        const waiting = await db.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      await pushStale();
    });
    await fresher;
    return stored();
  };
  /** A batch read by nextEntities, locked first or not, pushed by ResultsPusher.push. */
  const entitiesThenPush = (lockBeforeRead: boolean) => async (client: PoolClient) => {
    const entities = await store.nextEntities(["dataset"], "", 10, {
      client,
      lockFor: lockBeforeRead ? pusher : undefined,
    });
    expect(entities.map((e) => e.urn)).toEqual([URN]);
    return () => pusher.push(client, [item(false, 1)]);
  };

  it("keeps the fresher evaluate push when the batch locks before it reads", async () => {
    expect(await race(entitiesThenPush(true))).toEqual({ passing: [{ test: TEST, type: "SUCCESS" }], failing: [] });
  });

  it("keeps it through runTest's own path: the batch read under its locks, merged in the thread, pushMerged", async () => {
    const result = await race(async (client) => {
      const batch = await store.nextBatch(["dataset"], "", 10, { client, lockFor: pusher, testUrns: [TEST] });
      expect(batch.urns).toEqual([URN]);
      return () => {
        const entities = new Map((JSON.parse(batch.json) as EntitySnapshot[]).map((e) => [e.urn, e]));
        const merged = mergeBatch(
          [item(false, 1).evaluation],
          (u) => entities.get(u)!,
          new Set([TEST]),
          {
            onTypes: batch.onTypes!,
          },
          [],
        );
        const versions = new Map(Object.entries(JSON.parse(batch.versions!) as Record<string, number>));
        return pusher.pushMerged(client, merged, { actorUrn: ACTOR }, versions, 1);
      };
    });
    expect(result).toEqual({ passing: [{ test: TEST, type: "SUCCESS" }], failing: [] });
  });

  it("(the old order: read, then lock) loses the fresher push, which is what locking first prevents", async () => {
    expect(await race(entitiesThenPush(false))).toEqual({
      passing: [],
      failing: [{ test: TEST, type: "FAILURE", failedRules: [] }],
    });
  });
});
