/**
 * truncateTimeseriesAspect's tasks end to end in one process: the gateway over real HTTP, a real BullMQ truncation
 * worker, real PostgreSQL partitions. A task id at once, deduplicated; partitions dropped; task status; cancellation
 * of a waiting, retrying or active task; a job BullMQ gave up on.
 */
import { eventually } from "@mdp/core/testing";
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { QUEUE_NAMES, createRedis, closeRedis, whenReady } from "@mdp/queues";
import {
  ROOT,
  startGateway,
  startTruncationWorker,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { PROFILE, T0, taskStatus, TRUNCATE, USAGE, waitForTaskState } from "./support/truncation";

describe("time-series truncation", () => {
  let h: Harness;
  let store: TimeseriesStore;

  const load = async (ref: TimeseriesAspectRef, timestamps: number[]) => {
    const rows = timestamps.map((t, i) => ({
      urn: `urn:li:${ref.entityType}:(urn:li:dataPlatform:x,t${i % 7},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t }),
    }));
    await store.prepare([{ ...ref, rows }]);
    await inTransaction(h.database.pool, (client) => store.append(client, ref, rows));
  };
  const timestampsOf = async (ref: TimeseriesAspectRef) => {
    const { rows } = await h.database.pool.query<{ t: string }>(
      `SELECT timestamp_millis AS t FROM timeseries."ts_${ref.entityType}_${ref.aspectName}" ORDER BY 1`,
    );
    return rows.map((r) => Number(r.t));
  };
  const counters = async (ref: TimeseriesAspectRef) =>
    (await store.partitions(ref)).reduce((s, p) => s + p.rowCount, 0);
  /** Drops every aspect table (their partitions go with them) and the bookkeeping. */
  const clear = async () => {
    const { rows } = await h.database.pool.query<{ table_name: string }>(
      "SELECT table_name FROM timeseries.aspect_table",
    );
    for (const r of rows) await h.database.pool.query(`DROP TABLE timeseries."${r.table_name}"`);
    await h.database.pool.query("DELETE FROM timeseries.aspect_table");
    store = new TimeseriesStore(h.database.pool); // forgets the partitions it had seen
  };

  beforeAll(async () => {
    h = await startGateway();
    store = new TimeseriesStore(h.database.pool);
  });
  afterAll(() => h.close());

  describe("execution", () => {
    let worker: { close(): Promise<void> } | undefined;
    afterEach(async () => {
      await worker?.close();
      worker = undefined;
    });

    const status = (taskId: string) => taskStatus(h, taskId);
    const waitForState = (taskId: string, states: string[], timeoutMs?: number) =>
      waitForTaskState(h, taskId, states, timeoutMs);

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
      const first = await h.post(TRUNCATE, body);
      const second = await h.post(TRUNCATE, body);
      const other = await h.post(TRUNCATE, { ...body, batchSize: 8 });
      expect(first.body.value).toMatch(/^[0-9a-f-]{36}$/);
      expect(second.body.value).toBe(first.body.value);
      expect(other.body.value).not.toBe(first.body.value);
      await h.post("/gms/operations?action=cancelTask", { taskId: other.body.value });
      expect(await status(first.body.value as string)).toMatchObject({ state: "waiting", type: "TRUNCATE_TIMESERIES" });

      worker = await startTruncationWorker(h);
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
      const redis = createRedis(h.config.REDIS_URL, "worker");
      const { Queue } = await import("bullmq");
      const queue = new Queue(QUEUE_NAMES.truncate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
      await (await queue.getJob(first.body.value as string))?.remove();
      await queue.close();
      await closeRedis(redis);
      const viaGet = await fetch(`${h.baseUrl}/gms/operations/tasks/${first.body.value as string}`, {
        headers: systemClientHeaders(ROOT),
      });
      expect(((await viaGet.json()) as { value: { state: string } }).value.state).toBe("completed");
    });

    it("drops partitions wholly before the cutoff that hold no rows: they count against the partition limit", async () => {
      await clear();
      // Days 0-2 get partitions and no rows (what a write that failed after creating them leaves, or a truncation
      // whose cutoff emptied a day); day 5 holds the one row.
      const emptyDays = [0, 1, 2].map((d) => T0 + d * DAY_MILLIS + 1000);
      await store.prepare([
        { ...PROFILE, rows: emptyDays.map((t) => ({ urn: "urn:li:dataset:e", timestampMillis: t, valueJson: "{}" })) },
      ]);
      const kept = [T0 + 5 * DAY_MILLIS + 1000];
      await load(PROFILE, kept);
      expect((await store.partitions(PROFILE)).map((p) => p.rowCount)).toEqual([0, 0, 0, 1]);

      worker = await startTruncationWorker(h);
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 3 * DAY_MILLIS };
      expect((await h.post(TRUNCATE, body)).body.value).toMatch(/^Delete 0 out of 1 rows \(0\.00%\)/);
      const taskId = (await h.post(TRUNCATE, { ...body, dryRun: false })).body.value as string;
      expect(await waitForState(taskId, ["completed", "failed"])).toMatchObject({
        state: "completed",
        progress: { deleted: 0, toDelete: 0, percent: 100 },
        result: { deleted: 0 },
      });
      expect((await store.partitions(PROFILE)).map((p) => p.fromMillis)).toEqual([T0 + 5 * DAY_MILLIS]);
      expect(await timestampsOf(PROFILE)).toEqual(kept);
    });

    it("answers 404 for an unknown task and 409 for cancelling a finished one", async () => {
      expect((await h.post("/gms/operations?action=getTaskStatus", { taskId: "nope" })).status).toBe(404);
      const { rows } = await h.database.pool.query<{ id: string }>(
        "SELECT id FROM task WHERE state = 'completed' LIMIT 1",
      );
      const res = await h.post("/gms/operations?action=cancelTask", { taskId: rows[0]!.id });
      expect(res).toMatchObject({ status: 409, body: { code: "CONFLICT" } });
    });

    it("cancels a waiting task at once: nothing is deleted", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1]);
      await load(USAGE, [T0]);
      const taskId = (
        await h.post(TRUNCATE, {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: T0 + 10,
          dryRun: false,
        })
      ).body.value as string;
      const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId });
      expect(cancelled.body.value).toMatchObject({ state: "cancelled", cancelRequested: true });
      worker = await startTruncationWorker(h);
      // A task queued after it: once the worker (one job at a time, in queue order) has done that one, it has had
      // its chance at the cancelled one.
      const later = (
        await h.post(TRUNCATE, {
          entityType: "dataset",
          aspect: USAGE.aspectName,
          endTimeMillis: T0 + 10,
          dryRun: false,
        })
      ).body.value as string;
      expect(await waitForState(later, ["completed", "failed", "cancelled"])).toMatchObject({ state: "completed" });
      expect(await timestampsOf(USAGE)).toEqual([]);
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1]);
    });

    it("says what an earlier attempt deleted when a task waiting for its retry is cancelled", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1, T0 + 2]);
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 10, dryRun: false };
      // Two tasks left as a failed first attempt leaves them (it deleted 2 rows), waiting for the next one.
      const byGateway = (await h.post(TRUNCATE, body)).body.value as string;
      const asAfterAFailedAttempt = (taskId: string) =>
        h.database.pool.query(
          `UPDATE task SET started_at = now(), attempts_made = 1, progress = progress || '{"deleted": 2}'
            WHERE id = $1`,
          [taskId],
        );
      await asAfterAFailedAttempt(byGateway);
      // Taken off the queue by the gateway.
      const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId: byGateway });
      expect(cancelled.body.value).toMatchObject({
        state: "cancelled",
        failedReason: "Cancelled; 2 rows were deleted before the cancellation",
      });
      // Found cancelled by the worker when the retry is delivered (a cancel that came as the job was being taken).
      const byWorker = (await h.post(TRUNCATE, { ...body, endTimeMillis: T0 + 11 })).body.value as string;
      await asAfterAFailedAttempt(byWorker);
      await h.database.pool.query("UPDATE task SET cancel_requested = true WHERE id = $1", [byWorker]);
      worker = await startTruncationWorker(h);
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
      worker = await startTruncationWorker(h);
      const taskId = (
        await h.post(TRUNCATE, {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: T0 + 3000,
          dryRun: false,
          batchSize: 1,
        })
      ).body.value as string;
      await waitForState(taskId, ["active"]);
      // Once it has deleted something: an active task is also one still planning, before any batch.
      await eventually(
        "the task has deleted something",
        async () => ((await status(taskId)).progress as { deleted: number }).deleted > 0,
      );
      await h.post("/gms/operations?action=cancelTask", { taskId });
      const end = await waitForState(taskId, ["cancelled", "completed", "failed"]);
      expect(end.state).toBe("cancelled");
      const deleted = (end.progress as { deleted: number }).deleted;
      expect(deleted).toBeGreaterThan(0);
      expect(deleted).toBeLessThan(3000);
      expect(end.failedReason).toBe(`Cancelled; ${deleted} rows were deleted before the cancellation`);
      expect(await timestampsOf(PROFILE)).toHaveLength(3000 - deleted);
      expect(await counters(PROFILE)).toBe(3000 - deleted);

      // In the dashboard it is no failure to retry: its job completed, its value saying it was cancelled.
      const redis = createRedis(h.config.REDIS_URL, "worker");
      const { Queue } = await import("bullmq");
      const queue = new Queue(QUEUE_NAMES.truncate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
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
      const first = (await h.post(TRUNCATE, body)).body.value as string;
      // As a worker leaves a task it is running when asked to cancel it: active until its next step.
      await h.database.pool.query("UPDATE task SET state = 'active', cancel_requested = true WHERE id = $1", [first]);
      const second = (await h.post(TRUNCATE, body)).body.value as string;
      expect(second).not.toBe(first);
      expect(await status(second)).toMatchObject({ state: "waiting", cancelRequested: false });
      // Neither job may run in a later test.
      await h.database.pool.query("UPDATE task SET state = 'waiting' WHERE id = $1", [first]);
      for (const taskId of [first, second]) {
        await h.post("/gms/operations?action=cancelTask", { taskId });
        expect(await status(taskId)).toMatchObject({ state: "cancelled" });
      }
    });

    it("ends as failed a task whose job BullMQ gave up on, having stalled too often", async () => {
      await clear();
      await load(PROFILE, [T0, T0 + 1]);
      const body = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 + 1, dryRun: false };
      const taskId = (await h.post(TRUNCATE, body)).body.value as string;
      // What BullMQ's stalled-job check writes on a job whose workers died during it once too often.
      const redis = createRedis(h.config.REDIS_URL, "producer");
      await whenReady(redis);
      const jobKey = `${h.config.QUEUE_PREFIX}:${QUEUE_NAMES.truncate}:${taskId}`;
      await redis.hset(jobKey, "defa", "job stalled more than allowable limit");
      await closeRedis(redis);
      worker = await startTruncationWorker(h);
      expect(await waitForState(taskId, ["failed", "completed"])).toMatchObject({
        state: "failed",
        failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
      });
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1]); // its handler never ran
      // An identical request is not answered with the failed task.
      expect((await h.post(TRUNCATE, body)).body.value).not.toBe(taskId);
    });
  });
});
