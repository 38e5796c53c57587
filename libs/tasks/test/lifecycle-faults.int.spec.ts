/**
 * The task state machine under faults, against real PostgreSQL (a database of its own) and real Redis (a queue prefix
 * of its own), with leases shrunk to a few hundred milliseconds: a worker process's leases when it stalls, loses
 * PostgreSQL or dies; reconciliation of lapsed leases, vanished jobs and jobs that failed for good.
 */
import { randomUUID } from "node:crypto";
import { UnrecoverableError, Worker } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { createDatabase, type Database } from "@mdp/db";
import { closeRedis, createRedis, Producer, QUEUE_NAMES } from "@mdp/queues";
import { LeaseLostError, presentState, TaskLifecycle, TaskReconciler, type Lease } from "../src";
import { LEASE_MS, REDIS_URL, logger, request, startLifecycleHarness } from "./support/lifecycle-harness";

describe("task lifecycle", () => {
  const lc = startLifecycleHarness();
  const { queueing, create, claimed, row, pastItsLease } = lc;

  describe("a worker process's leases under faults", () => {
    let workerDb: Database;
    /** the worker process: its own pool, which the tests cut off from PostgreSQL */
    let worker: TaskLifecycle;
    /** another worker process */
    let other: TaskLifecycle;
    const keepers: Array<{ stop(): void }> = [];

    beforeEach(() => {
      workerDb = createDatabase(lc.testDb.url);
      worker = new TaskLifecycle(workerDb, logger, { leaseMs: LEASE_MS });
      other = new TaskLifecycle(lc.db, logger, { leaseMs: LEASE_MS });
    });
    afterEach(async () => {
      keepers.splice(0).forEach((k) => k.stop());
      await workerDb.close();
    });

    /** Every statement of the worker's pool fails while `during` runs: PostgreSQL is down for it. */
    const outage = async (during: () => Promise<void>) => {
      const refused = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
      const query = jest.spyOn(workerDb.pool, "query").mockImplementation(refused as never);
      const connect = jest.spyOn(workerDb.pool, "connect").mockImplementation(refused as never);
      try {
        await during();
      } finally {
        query.mockRestore();
        connect.mockRestore();
      }
    };
    const claimedBy = async (lifecycle: TaskLifecycle, taskId: string): Promise<Lease> => {
      const claim = await lifecycle.claim(taskId);
      if (claim.outcome !== "claimed") throw new Error(`not claimed: ${claim.outcome}`);
      return claim.lease;
    };

    it("renews only the attempts it runs: one that failed unrecorded lapses and is taken over; the others stay active", async () => {
      const running = await create();
      const died = await create();
      await claimedBy(worker, running.taskId);
      const dead = await claimedBy(worker, died.taskId);
      keepers.push(worker.keepLeases());
      // The attempt fails while PostgreSQL is away: it cannot record that, and its process must not keep it alive.
      await outage(() => worker.failAttempt(dead, new Error("Connection terminated unexpectedly"), false));
      const takenOverAt = Date.now();
      await eventually("another process's claim", async () => (await other.claim(died.taskId)).outcome === "claimed", {
        timeoutMs: LEASE_MS * 3,
      });
      expect(Date.now() - takenOverAt).toBeLessThan(LEASE_MS * 3);
      expect(await row(died.taskId)).toMatchObject({ state: "active", attemptsMade: 2, leaseOwner: other.owner });
      // The stale attempt is fenced: its writes change nothing, its process's renewals and late ending neither.
      await expect(worker.progress(dead, () => ({ deleted: 99 }))).rejects.toBeInstanceOf(LeaseLostError);
      await expect(worker.complete(dead, { deleted: 99 }, {})).rejects.toBeInstanceOf(LeaseLostError);
      await worker.renewLeases();
      expect(await row(died.taskId)).toMatchObject({ state: "active", attemptsMade: 2, leaseOwner: other.owner });
      expect((await row(died.taskId)).progress).toEqual({ deleted: 0 });
      // The attempt that kept running kept its lease all along.
      await pastItsLease(running.taskId);
      expect(presentState(await row(running.taskId)).state).toBe("active");
    });

    it("writes the ending an attempt could not record once PostgreSQL is back; its own next claim takes over at once", async () => {
      const { taskId } = await create();
      const first = await claimedBy(worker, taskId);
      await outage(() =>
        worker.failAttempt(first, new Error("terminating connection due to administrator command"), false),
      );
      expect(await row(taskId)).toMatchObject({ state: "active", leaseLapsed: false }); // nothing written yet
      // The same process's next attempt (BullMQ's retry) needs not wait for the lease of the one it knows is dead.
      const second = await claimedBy(worker, taskId);
      expect(second.attempt).toBe(2);
      await worker.renewLeases(); // the first attempt's ending is fenced by the second's lease
      expect(await row(taskId)).toMatchObject({ state: "active", attemptsMade: 2, failedReason: null });

      await outage(() => worker.failAttempt(second, new Error("Connection terminated unexpectedly"), false));
      await worker.renewLeases(); // PostgreSQL is back: the ending is written
      expect(await row(taskId)).toMatchObject({
        state: "waiting",
        attemptsMade: 2,
        failedReason: "Attempt 2 failed, retrying: PostgreSQL was unavailable for longer than the attempt could wait",
      });
    });

    it("cancel takes effect whatever the attempt's state: failed unrecorded, hung, or its lease lapsed", async () => {
      // Failed while PostgreSQL was away, then cancelled: its process writes the ending as cancelled.
      const unrecorded = await create();
      const lost = await claimedBy(worker, unrecorded.taskId);
      await outage(() => worker.failAttempt(lost, new Error("Connection terminated unexpectedly"), false));
      expect(await lc.tasks.requestCancel(unrecorded.taskId, async () => false)).toMatchObject({ state: "active" });
      await worker.renewLeases();
      expect(await row(unrecorded.taskId)).toMatchObject({
        state: "cancelled",
        failedReason: "Cancelled; 0 rows were deleted before the cancellation",
      });

      // Running but hung (never reaches a checkpoint): its own process ends it within two renewals, and fences it.
      const hung = await create();
      const stuck = await claimedBy(worker, hung.taskId);
      keepers.push(worker.keepLeases());
      const askedAt = Date.now();
      await lc.tasks.requestCancel(hung.taskId, async () => false);
      await eventually("the hung attempt's cancel", async () => (await row(hung.taskId)).state === "cancelled", {
        timeoutMs: LEASE_MS * 3,
      });
      expect(Date.now() - askedAt).toBeLessThan(LEASE_MS * 3);
      await expect(worker.progress(stuck, () => ({ deleted: 5 }))).rejects.toBeInstanceOf(LeaseLostError);
      expect(await row(hung.taskId)).toMatchObject({ state: "cancelled", progress: { deleted: 0 } });

      // Its worker process died (the lease lapsed) and its job is locked by it: cancelled at once all the same.
      const orphaned = await create();
      await claimedBy(other, orphaned.taskId);
      await eventually("the orphaned task's lease lapsed", async () => (await row(orphaned.taskId)).leaseLapsed);
      expect(await lc.tasks.requestCancel(orphaned.taskId, async () => false)).toMatchObject({
        state: "cancelled",
        failedReason: "Cancelled; 0 rows were deleted before the cancellation",
      });
    });
  });

  it("reconcile: lapsed leases wait again; waiting lc.tasks whose job vanished are queued again", async () => {
    const lapsed = await create();
    await claimed(lapsed.taskId);
    const orphan = await create();
    await (await lc.producer.queue.getJob(orphan.taskId))!.remove();
    await (await lc.producer.queue.getJob(lapsed.taskId))!.remove();
    await eventually("the lease lapsed", async () => (await row(lapsed.taskId)).leaseLapsed);
    const requeue = jest.fn(async (task: { id: string }) => {
      await queueing.enqueue(task.id);
    });
    const reconciler = new TaskReconciler(
      lc.tasks,
      [{ type: "TRUNCATE_TIMESERIES", jobExists: queueing.jobExists, requeue }],
      logger,
      { graceMs: 0 },
    );
    const { released, requeued } = await reconciler.reconcile();
    expect(released).toContain(lapsed.taskId);
    expect(await row(lapsed.taskId)).toMatchObject({
      state: "waiting",
      failedReason: "Attempt 1 stopped: its worker stopped responding; waiting for the next attempt",
    });
    expect(requeued).toEqual(expect.arrayContaining([lapsed.taskId, orphan.taskId]));
    expect(await queueing.jobExists(orphan.taskId)).toBe(true);
    // A second pass finds every job in place.
    expect((await reconciler.reconcile()).requeued).toEqual([]);
  });

  it("reconcile: a waiting task whose job failed for good (its ending never written) ends failed, with BullMQ's reason in our words", async () => {
    const own = new Producer("truncate", lc.redis, `{test-lc.tasks-failed-${randomUUID()}}`);
    const { taskId } = await lc.tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request: request(3),
        progress: {},
        createdBy: "urn:li:corpuser:admin",
        what: "a test task",
      },
      {
        enqueue: (id) => own.enqueue(id, { taskId: id, ...request(3) }),
        jobExists: async (id) => Boolean(await own.queue.getJob(id)),
      },
    );
    // Its last attempt failed in BullMQ while the row could not be told (the worker died before PostgreSQL was back).
    const connection = createRedis(REDIS_URL, "worker");
    const worker = new Worker(
      QUEUE_NAMES.truncate,
      async () => {
        throw new UnrecoverableError("connect ECONNREFUSED 127.0.0.1:5432");
      },
      { connection, prefix: own.queue.opts.prefix },
    );
    await eventually("BullMQ has failed the job's last attempt", () => own.failedReason(taskId));
    await worker.close();
    await closeRedis(connection);
    expect(await row(taskId)).toMatchObject({ state: "waiting" });

    const reconciler = new TaskReconciler(
      lc.tasks,
      [
        {
          type: "TRUNCATE_TIMESERIES",
          jobExists: async (id) => Boolean(await own.queue.getJob(id)),
          failedReason: (id) => own.failedReason(id),
          requeue: async () => undefined,
        },
      ],
      logger,
      { graceMs: 0 },
    );
    expect((await reconciler.reconcile()).failed).toEqual([taskId]);
    // The reason was an outage: said so in our words, never the driver's text.
    expect(await row(taskId)).toMatchObject({
      state: "failed",
      failedReason: "PostgreSQL was unavailable for longer than the attempt could wait",
    });
    await own.queue.obliterate({ force: true });
    await own.close();
  });
});
