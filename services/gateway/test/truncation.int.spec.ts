/**
 * truncateTimeseriesAspect end to end in one process: the gateway over real HTTP, a real BullMQ truncation worker,
 * real PostgreSQL partitions. Dry-run reports, validation, execution, task status, cancellation, timeouts, and a
 * randomized check that exactly the rows older than the cutoff go.
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
import { waitForState } from "../../../test/support/wait-for-state";

const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
const USAGE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetUsageStatistics" };
const CHART: TimeseriesAspectRef = { entityType: "chart", aspectName: "chartUsageStatistics" };
const T0 = Date.UTC(2026, 0, 1);
const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";

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

  describe("dry run", () => {
    beforeAll(async () => {
      await clear();
      // 10 days x 100 rows; cutoffs below fall on and inside day boundaries.
      await load(
        PROFILE,
        Array.from({ length: 1000 }, (_, i) => T0 + Math.floor(i / 100) * DAY_MILLIS + (i % 100) * 1000),
      );
    });

    it("is the default, reports exact numbers and the strategy, and changes nothing", async () => {
      const cutoff = T0 + 5 * DAY_MILLIS + 50 * 1000; // 5 whole days + 50 rows of the sixth
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: cutoff });
      expect(res).toMatchObject({
        status: 200,
        body: {
          value:
            "Delete 550 out of 1000 rows (55.00%). Reindexing the aspect without the deleted records. This was a dry run. Run with dryRun = false to execute.",
          plan: { toDelete: 550, totalRows: 1000 }, // beside value (truncation-plan.int.spec.ts)
        },
      });
      expect(await timestampsOf(PROFILE)).toHaveLength(1000);
    });

    it("names a delete by query when only part of one day goes", async () => {
      const res = await h.post(TRUNCATE, {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 12_500,
        dryRun: true,
      });
      expect(res.body.value).toBe(
        "Delete 13 out of 1000 rows (1.30%). Issuing a delete by query request. This was a dry run. Run with dryRun = false to execute.",
      );
    });

    it("counts rows strictly older than the cutoff", async () => {
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 });
      expect(res.body.value).toMatch(/^Delete 0 out of 1000 rows \(0\.00%\)/);
    });
  });

  describe("validation", () => {
    it.each([
      [{ aspect: "datasetProfile", endTimeMillis: 1 }, "entityType: is required (a string)"],
      [{ entityType: "dataset", endTimeMillis: 1 }, "aspect: is required (a string)"],
      [
        { entityType: "dataset", aspect: "datasetProfile" },
        "endTimeMillis: must be a whole number of epoch milliseconds",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: -1 }, "endTimeMillis: must be 0 or more"],
      [
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1.5 },
        "endTimeMillis: must be a whole number",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 0 }, "batchSize"],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 1_000_001 }, "batchSize"],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, timeoutSeconds: 0 }, "timeoutSeconds"],
      [
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, dryRun: "no" },
        "dryRun: must be true or false",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, force: true }, "unknown field(s) force"],
    ])("refuses %p with a 400 naming the field", async (body, message) => {
      const res = await h.post(TRUNCATE, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toContain(message);
    });

    it("answers 404 listing the known time-series aspects for an unknown one", async () => {
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProperties", endTimeMillis: 1 });
      expect(res.status).toBe(404);
      expect(res.body.message).toContain(
        "known: dataset/datasetProfile, dataset/datasetUsageStatistics, dataset/operation",
      );
    });

    it("refuses a caller without TRUNCATE_TIMESERIES_INDEX", async () => {
      const res = await h.post(
        TRUNCATE,
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1 },
        systemClientHeaders("urn:li:corpuser:viewer"),
      );
      expect(res).toMatchObject({
        status: 403,
        body: { message: "urn:li:corpuser:viewer is unauthorized to truncate time-series indexes." },
      });
    });
  });

  describe("execution", () => {
    let worker: { close(): Promise<void> } | undefined;
    afterEach(async () => {
      await worker?.close();
      worker = undefined;
    });

    const status = async (taskId: string) =>
      (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown> & {
        state: string;
      };

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
      const done = await waitForState(status, first.body.value as string, ["completed", "failed"]);
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
      expect(await waitForState(status, taskId, ["completed", "failed"])).toMatchObject({
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
      expect(await waitForState(status, later, ["completed", "failed", "cancelled"])).toMatchObject({
        state: "completed",
      });
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
      expect(await waitForState(status, byWorker, ["cancelled", "completed", "failed"])).toMatchObject({
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
      await waitForState(status, taskId, ["active"]);
      // Once it has deleted something: an active task is also one still planning, before any batch.
      await eventually(
        "the task has deleted something",
        async () => ((await status(taskId)).progress as { deleted: number }).deleted > 0,
      );
      await h.post("/gms/operations?action=cancelTask", { taskId });
      const end = await waitForState(status, taskId, ["cancelled", "completed", "failed"]);
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
      expect(await waitForState(status, taskId, ["failed", "completed"])).toMatchObject({
        state: "failed",
        failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
      });
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1]); // its handler never ran
      // An identical request is not answered with the failed task.
      expect((await h.post(TRUNCATE, body)).body.value).not.toBe(taskId);
    });

    it("stops cleanly at timeoutSeconds with the rows deleted so far reported", async () => {
      await clear();
      await load(
        PROFILE,
        Array.from({ length: 20_000 }, (_, i) => T0 + i),
      );
      worker = await startTruncationWorker(h);
      const taskId = (
        await h.post(TRUNCATE, {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: T0 + 20_000,
          dryRun: false,
          batchSize: 1,
          timeoutSeconds: 1,
        })
      ).body.value as string;
      const end = await waitForState(status, taskId, ["failed", "completed"], 30_000);
      const deleted = (end.progress as { deleted: number }).deleted;
      expect(end).toMatchObject({
        state: "failed",
        failedReason: `Timed out after 1 s; ${deleted} rows were deleted before the timeout`,
      });
      expect(await timestampsOf(PROFILE)).toHaveLength(20_000 - deleted);
    });

    /**
     * Truncates three rows with the cutoff inside their day's partition (timeoutSeconds 1) while another transaction
     * holds that partition in `mode`: the task must end timed out while the lock is still held, having deleted nothing.
     */
    const timesOutBehindLock = async (mode: string, whileWaiting?: (taskId: string) => Promise<void>) => {
      await clear();
      await load(PROFILE, [T0, T0 + 1, T0 + 2]);
      const [partition] = await new TimeseriesStore(h.database.pool).partitions(PROFILE);
      const locker = await h.database.pool.connect();
      try {
        await locker.query("BEGIN");
        await locker.query(`LOCK TABLE timeseries."${partition!.table}" IN ${mode} MODE`);
        worker = await startTruncationWorker(h);
        const started = Date.now();
        const taskId = (
          await h.post(TRUNCATE, {
            entityType: "dataset",
            aspect: "datasetProfile",
            endTimeMillis: T0 + 2,
            dryRun: false,
            timeoutSeconds: 1,
          })
        ).body.value as string;
        await whileWaiting?.(taskId);
        const end = await waitForState(status, taskId, ["failed", "completed"], 8_000);
        expect(end).toMatchObject({
          state: "failed",
          failedReason: "Timed out after 1 s; 0 rows were deleted before the timeout",
        });
        expect(Date.now() - started).toBeLessThan(5_000); // while the lock is still held
      } finally {
        await locker.query("ROLLBACK");
        locker.release();
      }
      expect(await timestampsOf(PROFILE)).toEqual([T0, T0 + 1, T0 + 2]);
    };

    it("holds timeoutSeconds inside a step: a batch waiting on a lock is cancelled when the time is up", async () => {
      // Reads pass, writes wait: planning counts the rows, the batch's DELETE waits.
      await timesOutBehindLock("SHARE");
    });

    it("holds timeoutSeconds while planning too: counting rows behind another's lock is cancelled in time", async () => {
      // Planning counts the partition's older rows, and the count waits; the task is active meanwhile.
      await timesOutBehindLock("ACCESS EXCLUSIVE", async (taskId) => {
        expect(await waitForState(status, taskId, ["active", "failed"], 5_000)).toMatchObject({ state: "active" });
      });
    });

    it("deletes exactly the older rows of the one aspect, over many random layouts and cutoffs", async () => {
      worker = await startTruncationWorker(h);
      let seed = 42;
      const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
      for (let round = 0; round < 12; round++) {
        await clear();
        const spread = (n: number, days: number) =>
          Array.from({ length: n }, () => T0 + Math.floor(random() * days * DAY_MILLIS));
        const profile = spread(50 + Math.floor(random() * 400), 1 + Math.floor(random() * 8));
        const usage = spread(100, 8);
        const chart = spread(100, 8);
        await load(PROFILE, profile);
        await load(USAGE, usage);
        await load(CHART, chart);
        const cutoffs = [...profile, T0, T0 + 3 * DAY_MILLIS, T0 + 9 * DAY_MILLIS];
        const cutoff = cutoffs[Math.floor(random() * cutoffs.length)]! + (random() < 0.5 ? 0 : 1);
        const batchSize = 1 + Math.floor(random() * 60);
        const taskId = (
          await h.post(TRUNCATE, {
            entityType: "dataset",
            aspect: "datasetProfile",
            endTimeMillis: cutoff,
            dryRun: false,
            batchSize,
          })
        ).body.value as string;
        const end = await waitForState(status, taskId, ["completed", "failed"]);
        const expected = profile.filter((t) => t >= cutoff).sort((a, b) => a - b);
        const context = `round ${round}: cutoff ${cutoff}, batchSize ${batchSize}`;
        expect({ context, left: await timestampsOf(PROFILE) }).toEqual({ context, left: expected });
        expect({ context, deleted: (end.progress as { deleted: number }).deleted }).toEqual({
          context,
          deleted: profile.length - expected.length,
        });
        expect(await timestampsOf(USAGE)).toEqual([...usage].sort((a, b) => a - b));
        expect(await timestampsOf(CHART)).toEqual([...chart].sort((a, b) => a - b));
        expect(await counters(PROFILE)).toBe(expected.length);
      }
    }, 120_000);
  });
});
