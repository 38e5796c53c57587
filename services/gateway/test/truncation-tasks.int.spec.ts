/**
 * truncateTimeseriesAspect's tasks end to end in one process: the gateway over real HTTP, a real BullMQ truncation
 * worker, real PostgreSQL partitions. A task id at once, deduplicated; partitions dropped; task status; cancellation
 * of a waiting, retrying or active task; a job BullMQ gave up on.
 */
import { eventually } from "@mdp/core/testing";
import { DAY_MILLIS } from "@mdp/db";
import { QUEUE_NAMES, createRedis, closeRedis, whenReady } from "@mdp/queues";
import { ROOT, systemClientHeaders } from "./support/gateway-harness";
import { PROFILE, T0, taskStatus, TRUNCATE, USAGE } from "./support/truncation";
import { startTruncationHarness } from "./support/truncation-harness";

describe("time-series truncation", () => {
  const tr = startTruncationHarness();
  const { load, timestampsOf, counters, clear, startWorker, startTask, waitForState } = tr;

  describe("execution", () => {
    const status = (taskId: string) => taskStatus(tr.gateway, taskId);

    it("returns a task id at once, the same one for an identical request while it waits, and the worker completes it", async () => {
      await clear();
      await load(
        PROFILE,
        Array.from({ length: 300 }, (_, i) => T0 + i * 3_600_000),
      ); // 12.5 days, hourly
      await load(
        USAGE,
        Array.from({ length: 50 }, (_, i) => T0 + i * 3_600_000),
      );
      const body = {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 100 * 3_600_000 + 1,
        dryRun: false,
        batchSize: 7,
      };
      const first = await tr.gateway.post(TRUNCATE, body);
      const second = await tr.gateway.post(TRUNCATE, body);
      const other = await tr.gateway.post(TRUNCATE, { ...body, batchSize: 8 });
      expect(first.body.value).toMatch(/^[0-9a-f-]{36}$/);
      expect(second.body.value).toBe(first.body.value);
      expect(other.body.value).not.toBe(first.body.value);
      await tr.gateway.post("/gms/operations?action=cancelTask", { taskId: other.body.value });
      expect(await status(first.body.value as string)).toMatchObject({ state: "waiting", type: "TRUNCATE_TIMESERIES" });

      await startWorker();
      const done = await waitForState(first.body.value as string, ["completed", "failed"]);
      expect(done).toMatchObject({
        state: "completed",
        progress: { deleted: 101, toDelete: 101, percent: 100 },
        result: { deleted: 101 },
        request: { entityType: "dataset", aspect: "datasetProfile", batchSize: 7, dryRun: false },
        failedReason: null,
        attemptsMade: 1,
      });
      expect(done.startedAt).toEqual(expect.any(Number));
      expect(done.finishedAt).toBeGreaterThanOrEqual(done.startedAt as number);
      expect((await timestampsOf(PROFILE))[0]).toBe(T0 + 101 * 3_600_000);
      expect(await timestampsOf(USAGE)).toHaveLength(50);
      expect(await counters(PROFILE)).toBe(199);

      // The durable row answers after the job is gone from Redis, through both forms.
      const redis = createRedis(tr.gateway.config.REDIS_URL, "worker");
      const { Queue } = await import("bullmq");
      const queue = new Queue(QUEUE_NAMES.truncate, { connection: redis, prefix: tr.gateway.config.QUEUE_PREFIX });
      await (await queue.getJob(first.body.value as string))?.remove();
      await queue.close();
      await closeRedis(redis);
      const viaGet = await fetch(`${tr.gateway.baseUrl}/gms/operations/tasks/${first.body.value as string}`, {
        headers: systemClientHeaders(ROOT),
      });
      expect(((await viaGet.json()) as { value: { state: string } }).value.state).toBe("completed");
    });

    it("drops partitions wholly before the cutoff that hold no rows: they count against the partition limit", async () => {
      await clear();
      // Days 0-2 get partitions and no rows (what a write that failed after creating them leaves, or a truncation
      // whose cutoff emptied a day); day 5 holds the one row.
      const emptyDays = [0, 1, 2].map((d) => T0 + d * DAY_MILLIS + 1000);
      await tr.store.prepare([
        { ...PROFILE, rows: emptyDays.map((t) => ({ urn: "urn:li:dataset:e", timestampMillis: t, valueJson: "{}" })) },
      ]);
      const kept = [T0 + 5 * DAY_MILLIS + 1000];
      await load(PROFILE, kept);
      expect((await tr.store.partitions(PROFILE)).map((p) => p.rowCount)).toEqual([0, 0, 0, 1]);

      await startWorker();
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 3 * DAY_MILLIS };
      expect((await tr.gateway.post(TRUNCATE, body)).body.value).toMatch(/^Delete 0 out of 1 rows \(0\.00%\)/);
      const taskId = (await tr.gateway.post(TRUNCATE, { ...body, dryRun: false })).body.value as string;
      expect(await waitForState(taskId, ["completed", "failed"])).toMatchObject({
        state: "completed",
        progress: { deleted: 0, toDelete: 0, percent: 100 },
        result: { deleted: 0 },
      });
      expect((await tr.store.partitions(PROFILE)).map((p) => p.fromMillis)).toEqual([T0 + 5 * DAY_MILLIS]);
      expect(await timestampsOf(PROFILE)).toEqual(kept);
    });

    it("answers 404 for an unknown task and 409 for cancelling a finished one", async () => {
      expect((await tr.gateway.post("/gms/operations?action=getTaskStatus", { taskId: "nope" })).status).toBe(404);
      const { rows } = await tr.gateway.database.pool.query<{ id: string }>(
        "SELECT id FROM task WHERE state = 'completed' LIMIT 1",
      );
      const res = await tr.gateway.post("/gms/operations?action=cancelTask", { taskId: rows[0]!.id });
      expect(res).toMatchObject({ status: 409, body: { code: "CONFLICT" } });
    });

    it("cancels a waiting task at once: nothing is deleted", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1]);
      await load(USAGE, [T0]);
      const taskId = await startTask({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 10 });
      const cancelled = await tr.gateway.post("/gms/operations?action=cancelTask", { taskId });
      expect(cancelled.body.value).toMatchObject({ state: "cancelled", cancelRequested: true });
      await startWorker();
      // A task queued after it: once the worker (one job at a time, in queue order) has done that one, it has had
      // its chance at the cancelled one.
      const later = await startTask({ entityType: "dataset", aspect: USAGE.aspectName, endTimeMillis: T0 + 10 });
      expect(await waitForState(later, ["completed", "failed", "cancelled"])).toMatchObject({ state: "completed" });
      expect(await timestampsOf(USAGE)).toEqual([]);
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1]);
    });

    it("says what an earlier attempt deleted when a task waiting for its retry is cancelled", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1, T0 + 2]);
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 10, dryRun: false };
      // Two tasks left as a failed first attempt leaves them (it deleted 2 rows), waiting for the next one.
      const byGateway = (await tr.gateway.post(TRUNCATE, body)).body.value as string;
      const asAfterAFailedAttempt = (taskId: string) =>
        tr.gateway.database.pool.query(
          `UPDATE task SET started_at = now(), attempts_made = 1, progress = progress || '{"deleted": 2}'
            WHERE id = $1`,
          [taskId],
        );
      await asAfterAFailedAttempt(byGateway);
      // Taken off the queue by the gateway.
      const cancelled = await tr.gateway.post("/gms/operations?action=cancelTask", { taskId: byGateway });
      expect(cancelled.body.value).toMatchObject({
        state: "cancelled",
        failedReason: "Cancelled; 2 rows were deleted before the cancellation",
      });
      // Found cancelled by the worker when the retry is delivered (a cancel that came as the job was being taken).
      const byWorker = (await tr.gateway.post(TRUNCATE, { ...body, endTimeMillis: T0 + 11 })).body.value as string;
      await asAfterAFailedAttempt(byWorker);
      await tr.gateway.database.pool.query("UPDATE task SET cancel_requested = true WHERE id = $1", [byWorker]);
      await startWorker();
      expect(await waitForState(byWorker, ["cancelled", "completed", "failed"])).toMatchObject({
        state: "cancelled",
        failedReason: "Cancelled; 2 rows were deleted before the cancellation",
      });
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1, T0 + 2]); // neither deleted anything more
    });

    it("stops an active task between batches when cancelled, reporting what was deleted", async () => {
      await clear();
      await load(
        PROFILE,
        Array.from({ length: 3000 }, (_, i) => T0 + i),
      );
      await startWorker();
      const taskId = await startTask({
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 3000,
        batchSize: 1,
      });
      await waitForState(taskId, ["active"]);
      // Once it has deleted something: an active task is also one still planning, before any batch.
      await eventually(
        "the task has deleted something",
        async () => ((await status(taskId)).progress as { deleted: number }).deleted > 0,
      );
      await tr.gateway.post("/gms/operations?action=cancelTask", { taskId });
      const end = await waitForState(taskId, ["cancelled", "completed", "failed"]);
      expect(end.state).toBe("cancelled");
      const deleted = (end.progress as { deleted: number }).deleted;
      expect(deleted).toBeGreaterThan(0);
      expect(deleted).toBeLessThan(3000);
      expect(end.failedReason).toBe(`Cancelled; ${deleted} rows were deleted before the cancellation`);
      expect(await timestampsOf(PROFILE)).toHaveLength(3000 - deleted);
      expect(await counters(PROFILE)).toBe(3000 - deleted);

      // In the dashboard it is no failure to retry: its job completed, its value saying it was cancelled.
      const redis = createRedis(tr.gateway.config.REDIS_URL, "worker");
      const { Queue } = await import("bullmq");
      const queue = new Queue(QUEUE_NAMES.truncate, { connection: redis, prefix: tr.gateway.config.QUEUE_PREFIX });
      try {
        const job = await eventually("the job has completed", async () => {
          const j = await queue.getJob(taskId);
          return j && (await j.getState()) === "completed" ? j : undefined;
        });
        expect(job!.returnvalue).toEqual({ cancelled: true, reason: end.failedReason });
        expect(job!.stacktrace).toEqual([]);
        // Its bar stops where the task did, not at the last of its reports (one a second) before the cancel.
        expect(job!.progress).toMatchObject({ deleted, batches: (end.progress as { batches: number }).batches });
      } finally {
        await queue.close();
        await closeRedis(redis);
      }
    });

    it("starts a new task for a request identical to one being cancelled, which will not do it again", async () => {
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 5, dryRun: false };
      const first = (await tr.gateway.post(TRUNCATE, body)).body.value as string;
      // As a worker leaves a task it is running when asked to cancel it: active until its next step.
      await tr.gateway.database.pool.query("UPDATE task SET state = 'active', cancel_requested = true WHERE id = $1", [
        first,
      ]);
      const second = (await tr.gateway.post(TRUNCATE, body)).body.value as string;
      expect(second).not.toBe(first);
      expect(await status(second)).toMatchObject({ state: "waiting", cancelRequested: false });
      // Neither job may run in a later test.
      await tr.gateway.database.pool.query("UPDATE task SET state = 'waiting' WHERE id = $1", [first]);
      for (const taskId of [first, second]) {
        await tr.gateway.post("/gms/operations?action=cancelTask", { taskId });
        expect(await status(taskId)).toMatchObject({ state: "cancelled" });
      }
    });

    it("ends as failed a task whose job BullMQ gave up on, having stalled too often", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1]);
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 1, dryRun: false };
      const taskId = (await tr.gateway.post(TRUNCATE, body)).body.value as string;
      // What BullMQ's stalled-job check writes on a job whose workers died during it once too often.
      const redis = createRedis(tr.gateway.config.REDIS_URL, "producer");
      await whenReady(redis);
      const jobKey = `${tr.gateway.config.QUEUE_PREFIX}:${QUEUE_NAMES.truncate}:${taskId}`;
      await redis.hset(jobKey, "defa", "job stalled more than allowable limit");
      await closeRedis(redis);
      await startWorker();
      expect(await waitForState(taskId, ["failed", "completed"])).toMatchObject({
        state: "failed",
        failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
      });
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1]); // its handler never ran
      // An identical request is not answered with the failed task.
      expect((await tr.gateway.post(TRUNCATE, body)).body.value).not.toBe(taskId);
    });
  });
});
