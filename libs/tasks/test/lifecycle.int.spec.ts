/**
 * Every transition of the task state machine, once, directly, against real PostgreSQL (a database of its own) and
 * real Redis (a queue prefix of its own), with leases shrunk to a few hundred milliseconds (a worker's leases under
 * faults, and reconciliation: lifecycle-faults.int.spec.ts).
 */
import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { inTransaction } from "@mdp/db";
import { closeRedis, createRedis, QUEUE_NAMES } from "@mdp/queues";
import { LeaseLostError, presentState } from "../src";
import { REDIS_URL, request, startLifecycleHarness } from "./support/lifecycle-harness";

describe("task lifecycle", () => {
  const lc = startLifecycleHarness();
  const { queueing, create, claimed, row, pastItsLease } = lc;

  it("create: writes a waiting row and its job; an identical request gets the same task; a failed enqueue ends it", async () => {
    const key = randomUUID();
    const first = await create(key);
    expect(first.existing).toBe(false);
    expect(await row(first.taskId)).toMatchObject({ state: "waiting", attemptsMade: 0, progress: { deleted: 0 } });
    expect(await queueing.jobExists(first.taskId)).toBe(true);
    expect(await create(key)).toEqual({ taskId: first.taskId, existing: true });

    // A row whose job vanished is queued again by the identical request.
    await (await lc.producer.queue.getJob(first.taskId))!.remove();
    expect((await create(key)).taskId).toBe(first.taskId);
    expect(await queueing.jobExists(first.taskId)).toBe(true);

    const refused = lc.tasks.create(
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
    const { rows } = await lc.db.pool.query<{ state: string; failed_reason: string }>(
      "SELECT state, failed_reason FROM task WHERE request->>'endTimeMillis' = '2'",
    );
    expect(rows).toEqual([{ state: "failed", failed_reason: "Could not be queued: Redis is unavailable." }]);
  });

  it("claim: waiting becomes active under a lease, attemptsMade counts it; a second claim finds it held", async () => {
    const { taskId } = await create();
    const lease = await claimed(taskId);
    expect(lease.attempt).toBe(1);
    const task = await row(taskId);
    expect(task).toMatchObject({ state: "active", attemptsMade: 1, leaseLapsed: false, leaseOwner: lc.tasks.owner });
    expect(task.startedAt).toBeInstanceOf(Date);
    expect(await lc.tasks.claim(taskId)).toMatchObject({ outcome: "held" });
  });

  it("progress: only the holder writes, in its step's transaction; renewal keeps a live worker active", async () => {
    const { taskId } = await create();
    const lease = await claimed(taskId);
    const keeper = lc.tasks.keepLeases();
    await pastItsLease(taskId);
    expect(presentState(await row(taskId)).state).toBe("active"); // renewed
    keeper.stop();
    const next = await inTransaction(lc.db.pool, (client) =>
      lc.tasks.progress(lease, (p) => ({ deleted: Number(p.deleted) + 5 }), client),
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
    await lc.db.pool.query("CREATE TABLE IF NOT EXISTS fenced_work (n int)");
    await expect(
      inTransaction(lc.db.pool, async (client) => {
        await client.query("INSERT INTO fenced_work VALUES (1)");
        await lc.tasks.progress(stale, () => ({ deleted: 99 }), client);
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await lc.db.pool.query("SELECT * FROM fenced_work")).rowCount).toBe(0);
    await expect(lc.tasks.complete(stale, { deleted: 99 }, {})).rejects.toBeInstanceOf(LeaseLostError);
    await expect(lc.tasks.checkpoint(stale)).rejects.toBeInstanceOf(LeaseLostError);
    await lc.tasks.complete(fresh, { deleted: 1 }, { deleted: 1 });
    // the lease is gone; its owner stays, saying which worker process ran the task
    expect(await row(taskId)).toMatchObject({
      state: "completed",
      progress: { deleted: 1 },
      leaseOwner: lc.tasks.owner,
    });
    expect(lc.tasks.owner).toContain(`:${process.pid}:`); // host:pid:random, to find the process's logs
  });

  it("retryWait: a failed attempt waits saying which and why; the last one fails", async () => {
    const { taskId } = await create();
    await lc.tasks.failAttempt(await claimed(taskId), new Error("boom"), false);
    expect(await row(taskId)).toMatchObject({
      state: "waiting",
      attemptsMade: 1,
      failedReason: "Attempt 1 failed, retrying: boom",
    });
    await lc.tasks.failAttempt(await claimed(taskId), new Error("boom again"), true);
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
            await lc.tasks.handBack(await claimed(taskId), job, token);
          } finally {
            closed = worker.close();
            resolve();
          }
        },
        { connection, prefix: lc.prefix },
      );
    });
    await handedBack;
    await closed; // the worker has let go of the job it handed back
    expect(await row(taskId)).toMatchObject({
      state: "waiting",
      attemptsMade: 1,
      failedReason: "Attempt 1 was handed back by a worker shutting down; waiting for the next attempt",
    });
    const job = await lc.producer.queue.getJob(taskId);
    expect(["waiting", "delayed", "active"]).toContain(await job!.getState());
    await closeRedis(connection);
  });

  it("fail and cancel by the holder end the task; a cancel requested before the claim ends it at the claim", async () => {
    const failing = await create();
    await lc.tasks.fail(await claimed(failing.taskId), "Timed out", { deleted: 3 });
    expect(await row(failing.taskId)).toMatchObject({
      state: "failed",
      failedReason: "Timed out",
      progress: { deleted: 3 },
    });

    const running = await create();
    const lease = await claimed(running.taskId);
    // Requested while active: only the flag; the holder finds it at its next checkpoint.
    expect(await lc.tasks.requestCancel(running.taskId, async () => false)).toMatchObject({
      state: "active",
      cancelRequested: true,
    });
    expect((await lc.tasks.checkpoint(lease)).cancelRequested).toBe(true);
    await lc.tasks.cancel(lease, "Cancelled; 0 rows were deleted before the cancellation");
    expect(await row(running.taskId)).toMatchObject({ state: "cancelled" });

    const queued = await create();
    await lc.db.pool.query("UPDATE task SET cancel_requested = true WHERE id = $1", [queued.taskId]);
    expect(await lc.tasks.claim(queued.taskId)).toMatchObject({
      outcome: "cancelled",
      reason: "Cancelled before it started",
    });
    expect(await lc.tasks.claim(queued.taskId)).toMatchObject({ outcome: "finished" });
  });

  it("cancel of a waiting task whose job is removed ends it at once; a finished task cannot be cancelled", async () => {
    const { taskId } = await create();
    expect(await lc.tasks.requestCancel(taskId, async () => true)).toMatchObject({
      state: "cancelled",
      failedReason: "Cancelled before it started",
    });
    expect(await lc.tasks.requestCancel(taskId, async () => true)).toBeNull();
  });

  it("giveUp: BullMQ's give-up ends a waiting or active task as failed", async () => {
    const { taskId } = await create();
    await claimed(taskId);
    await lc.tasks.giveUp(taskId, "job stalled more than allowable limit");
    expect(await row(taskId)).toMatchObject({
      state: "failed",
      failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
    });
  });
});
