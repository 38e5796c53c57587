/**
 * truncateTimeseriesAspect's time limits and exactness end to end in one process: the gateway over real HTTP, a real
 * BullMQ truncation worker, real PostgreSQL partitions. timeoutSeconds holds between batches, inside a step and while
 * planning; a randomized check that exactly the rows older than the cutoff go.
 */
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { startGateway, startTruncationWorker, type Harness } from "./support/gateway-harness";
import { CHART, PROFILE, T0, TRUNCATE, USAGE, waitForTaskState } from "./support/truncation";

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

    const waitForState = (taskId: string, states: string[], timeoutMs?: number) =>
      waitForTaskState(h, taskId, states, timeoutMs);

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
      const end = await waitForState(taskId, ["failed", "completed"], 30_000);
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
        const end = await waitForState(taskId, ["failed", "completed"], 8_000);
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
        expect(await waitForState(taskId, ["active", "failed"], 5_000)).toMatchObject({ state: "active" });
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
        const end = await waitForState(taskId, ["completed", "failed"]);
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
