/**
 * Every transition of the task state machine, once, directly, against real PostgreSQL (a database of its own) and
 * real Redis (a queue prefix of its own), with leases shrunk to a few hundred milliseconds (a worker's leases under
 * faults, and reconciliation: lifecycle-faults.int.spec.ts).
 */
import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { createDatabase, inTransaction, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, Producer, QUEUE_NAMES, type RedisConnection } from "@mdp/queues";
import { LeaseLostError, presentState, TaskLifecycle, type Lease } from "../src";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const logger = createLogger("test", "silent");
const LEASE_MS = 300;

describe("task lifecycle", () => {
  let testDb: TestDatabase;
  let db: Database;
  let redis: RedisConnection;
  let producer: Producer<"truncate">;
  let prefix: string;
  let tasks: TaskLifecycle;

  beforeAll(async () => {
    testDb = await createTestDatabase("tasks_lifecycle");
    db = createDatabase(testDb.url);
    redis = createRedis(REDIS_URL, "worker");
    prefix = `{test-tasks-${randomUUID()}}`;
    producer = new Producer("truncate", redis, prefix);
    tasks = new TaskLifecycle(db, logger, { leaseMs: LEASE_MS });
  });
  afterAll(async () => {
    await producer.queue.obliterate({ force: true });
    await producer.close();
    await closeRedis(redis);
    await db.close();
    await testDb.drop();
  });

  const request = (n: number) => ({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: n, batchSize: 10 });
  const queueing = {
    enqueue: (taskId: string) => producer.enqueue(taskId, { taskId, ...request(1) }),
    jobExists: async (taskId: string) => (await producer.queue.getJob(taskId)) !== undefined,
  };
  const create = (dedupKey = randomUUID()) =>
    tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request: request(1),
        dedupKey,
        progress: { deleted: 0 },
        createdBy: "urn:li:corpuser:admin",
        what: "a test task",
      },
      queueing,
    );
  const claimed = async (taskId: string): Promise<Lease> => {
    const claim = await tasks.claim(taskId);
    if (claim.outcome !== "claimed") throw new Error(`not claimed: ${claim.outcome}`);
    return claim.lease;
  };
  const row = async (taskId: string) => (await tasks.read(taskId))!;
  /** Until the database's clock passes the expiry of the lease the task holds now: unrenewed, it would have lapsed. */
  const pastItsLease = async (taskId: string) => {
    const { leaseExpiresAt } = await row(taskId);
    await eventually(
      `the database's clock past task ${taskId}'s lease`,
      async () =>
        (await db.pool.query<{ past: boolean }>("SELECT clock_timestamp() > $1 AS past", [leaseExpiresAt])).rows[0]!
          .past,
      { timeoutMs: LEASE_MS * 3 },
    );
  };

  it("create: writes a waiting row and its job; an identical request gets the same task; a failed enqueue ends it", async () => {
    const key = randomUUID();
    const first = await create(key);
    expect(first.existing).toBe(false);
    expect(await row(first.taskId)).toMatchObject({ state: "waiting", attemptsMade: 0, progress: { deleted: 0 } });
    expect(await queueing.jobExists(first.taskId)).toBe(true);
    expect(await create(key)).toEqual({ taskId: first.taskId, existing: true });

    // A row whose job vanished is queued again by the identical request.
    await (await producer.queue.getJob(first.taskId))!.remove();
    expect((await create(key)).taskId).toBe(first.taskId);
    expect(await queueing.jobExists(first.taskId)).toBe(true);

    const refused = tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request: request(2),
        progress: {},
        createdBy: "urn:li:corpuser:admin",
        what: "a test task",
      },
      {
        ...queueing,
        enqueue: () => Promise.reject(Object.assign(new Error("gone"), { name: "MaxRetriesPerRequestError" })),
      },
    );
    await expect(refused).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    const { rows } = await db.pool.query<{ state: string; failed_reason: string }>(
      "SELECT state, failed_reason FROM task WHERE request->>'endTimeMillis' = '2'",
    );
    expect(rows).toEqual([{ state: "failed", failed_reason: "Could not be queued: Redis is unavailable." }]);
  });

  it("claim: waiting becomes active under a lease, attemptsMade counts it; a second claim finds it held", async () => {
    const { taskId } = await create();
    const lease = await claimed(taskId);
    expect(lease.attempt).toBe(1);
    const task = await row(taskId);
    expect(task).toMatchObject({ state: "active", attemptsMade: 1, leaseLapsed: false, leaseOwner: tasks.owner });
    expect(task.startedAt).toBeInstanceOf(Date);
    expect(await tasks.claim(taskId)).toMatchObject({ outcome: "held" });
  });

  it("progress: only the holder writes, in its step's transaction; renewal keeps a live worker active", async () => {
    const { taskId } = await create();
    const lease = await claimed(taskId);
    const keeper = tasks.keepLeases();
    await pastItsLease(taskId);
    expect(presentState(await row(taskId)).state).toBe("active"); // renewed
    keeper.stop();
    const next = await inTransaction(db.pool, (client) =>
      tasks.progress(lease, (p) => ({ deleted: Number(p.deleted) + 5 }), client),
    );
    expect(next).toEqual({ deleted: 5 });
    expect((await row(taskId)).progress).toEqual({ deleted: 5 });
  });

  it("a lapsed lease reads as waiting at once, is taken over by the next claim, and fences the stale attempt", async () => {
    const { taskId } = await create();
    const stale = await claimed(taskId);
    await eventually("the lease lapsed", async () => (await row(taskId)).leaseLapsed); // the worker died: nobody renews
    const view = presentState(await row(taskId));
    expect(view).toEqual({
      state: "waiting",
      failedReason: "Attempt 1 stopped: its worker stopped responding; waiting for the next attempt",
    });
    const fresh = await claimed(taskId);
    expect(fresh.attempt).toBe(2);
    // The stale attempt's step rolls back whole: its work is not committed, its count not added.
    await db.pool.query("CREATE TABLE IF NOT EXISTS fenced_work (n int)");
    await expect(
      inTransaction(db.pool, async (client) => {
        await client.query("INSERT INTO fenced_work VALUES (1)");
        await tasks.progress(stale, () => ({ deleted: 99 }), client);
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await db.pool.query("SELECT * FROM fenced_work")).rowCount).toBe(0);
    await expect(tasks.complete(stale, { deleted: 99 }, {})).rejects.toBeInstanceOf(LeaseLostError);
    await expect(tasks.checkpoint(stale)).rejects.toBeInstanceOf(LeaseLostError);
    await tasks.complete(fresh, { deleted: 1 }, { deleted: 1 });
    // the lease is gone; its owner stays, saying which worker process ran the task
    expect(await row(taskId)).toMatchObject({
      state: "completed",
      progress: { deleted: 1 },
      leaseOwner: tasks.owner,
    });
    expect(tasks.owner).toContain(`:${process.pid}:`); // host:pid:random, to find the process's logs
  });

  it("retryWait: a failed attempt waits saying which and why; the last one fails", async () => {
    const { taskId } = await create();
    await tasks.failAttempt(await claimed(taskId), new Error("boom"), false);
    expect(await row(taskId)).toMatchObject({
      state: "waiting",
      attemptsMade: 1,
      failedReason: "Attempt 1 failed, retrying: boom",
    });
    await tasks.failAttempt(await claimed(taskId), new Error("boom again"), true);
    expect(await row(taskId)).toMatchObject({ state: "failed", attemptsMade: 2, failedReason: "boom again" });
  });

  it("handBack: the task waits again, saying so, and its job is back in the queue at once", async () => {
    const { taskId } = await create();
    const connection = createRedis(REDIS_URL, "worker");
    let taken = false;
    let closed: Promise<void> | undefined;
    const handedBack = new Promise<void>((resolve) => {
      const worker = new Worker(
        QUEUE_NAMES.truncate,
        async (job, token) => {
          if (job.id !== taskId || taken) return null;
          taken = true;
          try {
            await tasks.handBack(await claimed(taskId), job, token);
          } finally {
            closed = worker.close();
            resolve();
          }
        },
        { connection, prefix },
      );
    });
    await handedBack;
    await closed; // the worker has let go of the job it handed back
    expect(await row(taskId)).toMatchObject({
      state: "waiting",
      attemptsMade: 1,
      failedReason: "Attempt 1 was handed back by a worker shutting down; waiting for the next attempt",
    });
    const job = await producer.queue.getJob(taskId);
    expect(["waiting", "delayed", "active"]).toContain(await job!.getState());
    await closeRedis(connection);
  });

  it("fail and cancel by the holder end the task; a cancel requested before the claim ends it at the claim", async () => {
    const failing = await create();
    await tasks.fail(await claimed(failing.taskId), "Timed out", { deleted: 3 });
    expect(await row(failing.taskId)).toMatchObject({
      state: "failed",
      failedReason: "Timed out",
      progress: { deleted: 3 },
    });

    const running = await create();
    const lease = await claimed(running.taskId);
    // Requested while active: only the flag; the holder finds it at its next checkpoint.
    expect(await tasks.requestCancel(running.taskId, async () => false)).toMatchObject({
      state: "active",
      cancelRequested: true,
    });
    expect((await tasks.checkpoint(lease)).cancelRequested).toBe(true);
    await tasks.cancel(lease, "Cancelled; 0 rows were deleted before the cancellation");
    expect(await row(running.taskId)).toMatchObject({ state: "cancelled" });

    const queued = await create();
    await db.pool.query("UPDATE task SET cancel_requested = true WHERE id = $1", [queued.taskId]);
    expect(await tasks.claim(queued.taskId)).toMatchObject({
      outcome: "cancelled",
      reason: "Cancelled before it started",
    });
    expect(await tasks.claim(queued.taskId)).toMatchObject({ outcome: "finished" });
  });

  it("cancel of a waiting task whose job is removed ends it at once; a finished task cannot be cancelled", async () => {
    const { taskId } = await create();
    expect(await tasks.requestCancel(taskId, async () => true)).toMatchObject({
      state: "cancelled",
      failedReason: "Cancelled before it started",
    });
    expect(await tasks.requestCancel(taskId, async () => true)).toBeNull();
  });

  it("giveUp: BullMQ's give-up ends a waiting or active task as failed", async () => {
    const { taskId } = await create();
    await claimed(taskId);
    await tasks.giveUp(taskId, "job stalled more than allowable limit");
    expect(await row(taskId)).toMatchObject({
      state: "failed",
      failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
    });
  });
});
