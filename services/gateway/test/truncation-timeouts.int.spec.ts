/**
 * truncateTimeseriesAspect's time limits and exactness end to end in one process: the gateway over real HTTP, a real
 * BullMQ truncation worker, real PostgreSQL partitions. timeoutSeconds holds between batches, inside a step and while
 * planning; a randomized check that exactly the rows older than the cutoff go.
 */
import { DAY_MILLIS, TimeseriesStore } from "@mdp/db";
import { CHART, PROFILE, T0, USAGE } from "./support/truncation";
import { startTruncationHarness } from "./support/truncation-harness";

describe("time-series truncation", () => {
  const tr = startTruncationHarness();
  const { load, timestampsOf, counters, clear, startWorker, startTask, waitForState } = tr;

  describe("execution", () => {
    it("stops cleanly at timeoutSeconds with the rows deleted so far reported", async () => {
      await clear();
      await load(
        PROFILE,
        Array.from({ length: 20_000 }, (_, i) => T0 + i),
      );
      await startWorker();
      const taskId = await startTask({
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 20_000,
        batchSize: 1,
        timeoutSeconds: 1,
      });
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
      const [partition] = await new TimeseriesStore(tr.gateway.database.pool).partitions(PROFILE);
      const locker = await tr.gateway.database.pool.connect();
      try {
        await locker.query("BEGIN");
        await locker.query(`LOCK TABLE timeseries."${partition!.table}" IN ${mode} MODE`);
        await startWorker();
        const started = Date.now();
        const taskId = await startTask({
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: T0 + 2,
          timeoutSeconds: 1,
        });
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
      await startWorker();
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
        const taskId = await startTask({
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: cutoff,
          batchSize,
        });
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
