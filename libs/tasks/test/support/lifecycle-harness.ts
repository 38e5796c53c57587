/**
 * The database, Redis queue and TaskLifecycle the task lifecycle tests run against (lifecycle*.int.spec.ts): a
 * database and a queue prefix of their own, leases shrunk to LEASE_MS, set up in beforeAll and dropped in afterAll,
 * and the helpers those tests call. Call it once inside a describe; the handles are set by the time the tests run.
 */
import { randomUUID } from "node:crypto";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, Producer, type RedisConnection } from "@mdp/queues";
import { TaskLifecycle, type Lease } from "../../src";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const logger = createLogger("test", "silent");
export const LEASE_MS = 300;

export const request = (n: number) => ({
  entityType: "dataset",
  aspect: "datasetProfile",
  endTimeMillis: n,
  batchSize: 10,
});

export function startLifecycleHarness() {
  const lc = {
    // Set in beforeAll below, before any test reads them.
    testDb: undefined as unknown as TestDatabase,
    db: undefined as unknown as Database,
    redis: undefined as unknown as RedisConnection,
    producer: undefined as unknown as Producer<"truncate">,
    prefix: "",
    tasks: undefined as unknown as TaskLifecycle,
    queueing: {
      enqueue: (taskId: string) => lc.producer.enqueue(taskId, { taskId, ...request(1) }),
      jobExists: async (taskId: string) => (await lc.producer.queue.getJob(taskId)) !== undefined,
    },
    create: (dedupKey = randomUUID()) =>
      lc.tasks.create(
        {
          type: "TRUNCATE_TIMESERIES",
          request: request(1),
          dedupKey,
          progress: { deleted: 0 },
          createdBy: "urn:li:corpuser:admin",
          what: "a test task",
        },
        lc.queueing,
      ),
    claimed: async (taskId: string): Promise<Lease> => {
      const claim = await lc.tasks.claim(taskId);
      if (claim.outcome !== "claimed") throw new Error(`not claimed: ${claim.outcome}`);
      return claim.lease;
    },
    row: async (taskId: string) => (await lc.tasks.read(taskId))!,
    /** Until the database's clock passes the expiry of the lease the task holds now: unrenewed, it would have lapsed. */
    pastItsLease: async (taskId: string) => {
      const { leaseExpiresAt } = await lc.row(taskId);
      await eventually(
        `the database's clock past task ${taskId}'s lease`,
        async () =>
          (await lc.db.pool.query<{ past: boolean }>("SELECT clock_timestamp() > $1 AS past", [leaseExpiresAt]))
            .rows[0]!.past,
        { timeoutMs: LEASE_MS * 3 },
      );
    },
  };

  beforeAll(async () => {
    lc.testDb = await createTestDatabase("tasks_lifecycle");
    lc.db = createDatabase(lc.testDb.url);
    lc.redis = createRedis(REDIS_URL, "worker");
    lc.prefix = `{test-tasks-${randomUUID()}}`;
    lc.producer = new Producer("truncate", lc.redis, lc.prefix);
    lc.tasks = new TaskLifecycle(lc.db, logger, { leaseMs: LEASE_MS });
  });
  afterAll(async () => {
    await lc.producer.queue.obliterate({ force: true });
    await lc.producer.close();
    await closeRedis(lc.redis);
    await lc.db.close();
    await lc.testDb.drop();
  });
  return lc;
}
