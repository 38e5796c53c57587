/**
 * The truncation plan as data, rethrottling and the bytes a truncation freed, end to end: the gateway over real HTTP,
 * a real BullMQ truncation worker, real PostgreSQL partitions and Redis.
 */
import { eventually } from "@mdp/core/testing";
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { startGateway, startTruncationWorker, type Harness } from "./support/gateway-harness";
import { waitForState } from "../../../test/support/wait-for-state";

const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
const T0 = Date.UTC(2026, 0, 1);
const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";
const RETHROTTLE = "/gms/operations?action=rethrottleTask";

interface Plan {
  totalRows: number;
  toDelete: number;
  strategy: string;
  strategyReason: string;
  partitionsToDrop: {
    count: number;
    rows: number;
    bytes: number;
    listed: Array<{ partition: string; fromMillis: number; rows: number; bytes: number }>;
    omitted: number;
  };
  boundary: { rowsToDelete: number; batches: number; batchSize: number } | null;
  estimate: {
    seconds: number;
    deleteSeconds: number;
    dropSeconds: number;
    rowsPerSecond: number | null;
    rates: Record<
      "deleteRowsPerSecond" | "dropPartitionsPerSecond",
      { value: number; source: string; samples: number }
    >;
    note: string;
  };
}

describe("truncation plan, throttle and bytes freed", () => {
  let h: Harness;
  let store: TimeseriesStore;
  let worker: { close(): Promise<void> } | undefined;

  const load = async (timestamps: number[]) => {
    const rows = timestamps.map((t, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:x,t${i % 7},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t, padding: "x".repeat(200) }),
    }));
    await store.prepare([{ ...PROFILE, rows }]);
    await inTransaction(h.database.pool, (client) => store.append(client, PROFILE, rows));
  };
  const clear = async () => {
    const { rows } = await h.database.pool.query<{ table_name: string }>(
      "SELECT table_name FROM timeseries.aspect_table",
    );
    for (const r of rows) await h.database.pool.query(`DROP TABLE timeseries."${r.table_name}"`);
    await h.database.pool.query("DELETE FROM timeseries.aspect_table");
    store = new TimeseriesStore(h.database.pool);
  };
  const status = async (taskId: string) =>
    (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown> & {
      state: string;
      progress: { deleted: number; rowsPerSecond: number | null };
      attemptsMade: number;
    };
  const dryRun = async (body: Record<string, unknown>) => {
    const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", ...body });
    expect(res.status).toBe(200);
    return res.body as { value: string; plan: Plan };
  };

  beforeAll(async () => {
    h = await startGateway();
    store = new TimeseriesStore(h.database.pool);
  });
  afterEach(async () => {
    await worker?.close();
    worker = undefined;
  });
  afterAll(() => h.close());

  it("answers the dry run's sentence in value and the plan beside it, estimated from stated defaults", async () => {
    await clear();
    // 10 days x 100 rows; the cutoff takes 5 whole days and 50 rows of the sixth.
    await load(Array.from({ length: 1000 }, (_, i) => T0 + Math.floor(i / 100) * DAY_MILLIS + (i % 100) * 1000));
    const { value, plan } = await dryRun({ endTimeMillis: T0 + 5 * DAY_MILLIS + 50 * 1000, batchSize: 20 });
    expect(value).toBe(
      "Delete 550 out of 1000 rows (55.00%). Reindexing the aspect without the deleted records. This was a dry run. Run with dryRun = false to execute.",
    );
    expect(plan).toMatchObject({
      totalRows: 1000,
      toDelete: 550,
      strategy: "reindex",
      partitionsToDrop: { count: 5, rows: 500, omitted: 0 },
      boundary: { rowsToDelete: 50, batchSize: 20, batches: 3 },
      estimate: {
        rowsPerSecond: null,
        rates: {
          deleteRowsPerSecond: { value: 10_000, source: "default", samples: 0 },
          dropPartitionsPerSecond: { value: 20, source: "default", samples: 0 },
        },
      },
    });
    expect(plan.strategyReason).toContain("5 day partition(s) wholly before the cutoff are dropped whole");
    expect(plan.partitionsToDrop.listed.map((p) => [p.fromMillis, p.rows])).toEqual(
      [0, 1, 2, 3, 4].map((d) => [T0 + d * DAY_MILLIS, 100]),
    );
    for (const p of plan.partitionsToDrop.listed) expect(p.bytes).toBeGreaterThan(0);
    expect(plan.partitionsToDrop.bytes).toBe(plan.partitionsToDrop.listed.reduce((sum, p) => sum + p.bytes, 0));
    // 5 partitions at 20/s and 50 rows at 10,000 rows/s
    expect(plan.estimate).toMatchObject({ dropSeconds: 0.25, deleteSeconds: 0.01, seconds: 0.26 });
    expect(plan.estimate.note).toMatch(/^No truncation on this deployment has measured batch deletes and drops yet/);

    // A pace in the request holds the batch deletes to it in the estimate.
    const paced = await dryRun({ endTimeMillis: T0 + 5 * DAY_MILLIS + 50 * 1000, rowsPerSecond: 10 });
    expect(paced.plan.estimate).toMatchObject({ rowsPerSecond: 10, deleteSeconds: 5 });
    expect(paced.plan.estimate.note).toContain("held to 10 rows/s");
  });

  it("lists at most 100 partitions to drop, counting them all", async () => {
    await clear();
    // 150 empty days (their partitions made, no rows; at most 100 days a write), then one row
    for (const first of [0, 75]) {
      await store.prepare([
        {
          ...PROFILE,
          rows: Array.from({ length: 75 }, (_, d) => ({
            urn: "urn:li:dataset:e",
            timestampMillis: T0 + (first + d) * DAY_MILLIS,
            valueJson: "{}",
          })),
        },
      ]);
    }
    await load([T0 + 151 * DAY_MILLIS]);
    const { plan } = await dryRun({ endTimeMillis: T0 + 150 * DAY_MILLIS });
    expect(plan.partitionsToDrop).toMatchObject({ count: 150, rows: 0, omitted: 50 });
    expect(plan.partitionsToDrop.listed).toHaveLength(100);
    expect(plan.partitionsToDrop.listed[0]!.fromMillis).toBe(T0);
  });

  it("reports the bytes it freed, and later dry runs estimate from the rates it measured", async () => {
    await clear();
    await load(Array.from({ length: 1000 }, (_, i) => T0 + Math.floor(i / 100) * DAY_MILLIS + (i % 100) * 1000));
    worker = await startTruncationWorker(h);
    const cutoff = T0 + 5 * DAY_MILLIS + 50 * 1000;
    const planned = (await dryRun({ endTimeMillis: cutoff })).plan;
    const taskId = (await h.post(TRUNCATE, { ...PROFILE_BODY, endTimeMillis: cutoff, dryRun: false, batchSize: 20 }))
      .body.value as string;
    const done = await waitForState(status, taskId, ["completed", "failed"]);
    const result = done.result as {
      deleted: number;
      partitionsDropped: number;
      bytesFreed: number;
      tableBytes: { before: number; after: number };
      indexBytes: { before: number; after: number };
    };
    expect(done.state).toBe("completed");
    expect(result).toMatchObject({ deleted: 550, partitionsDropped: 5 });
    expect(result.bytesFreed).toBeGreaterThan(0);
    expect(result.tableBytes.after).toBeLessThan(result.tableBytes.before);
    expect(result.indexBytes.after).toBeLessThan(result.indexBytes.before);
    expect(result.bytesFreed).toBe(
      result.tableBytes.before + result.indexBytes.before - result.tableBytes.after - result.indexBytes.after,
    );
    // The five dropped days took about what the plan said they hold (vacuum may add a free-space map meanwhile).
    expect(result.bytesFreed).toBeGreaterThan(planned.partitionsToDrop.bytes / 2);

    await load(Array.from({ length: 100 }, (_, i) => T0 + 20 * DAY_MILLIS + i));
    const { plan } = await dryRun({ endTimeMillis: T0 + 20 * DAY_MILLIS + 50 });
    expect(plan.estimate.rates.deleteRowsPerSecond).toMatchObject({ source: "measured", samples: 1 });
    expect(plan.estimate.rates.dropPartitionsPerSecond).toMatchObject({ source: "measured", samples: 1 });
    expect(plan.estimate.rates.deleteRowsPerSecond.value).toBeGreaterThan(0);
    expect(plan.estimate.note).toMatch(/^From the rates the last finished truncations measured here/);
  });

  it("rethrottles a running truncation: it slows to the pace, keeps its lease, shows the pace, and speeds up again", async () => {
    await clear();
    await load(Array.from({ length: 10_000 }, (_, i) => T0 + i));
    // A lease far shorter than the waits the pace makes (20 rows at 5 rows/s: 4 s between batches).
    const leaseMs = 1500;
    worker = await startTruncationWorker(h, { leaseMs });
    const taskId = (
      await h.post(TRUNCATE, { ...PROFILE_BODY, endTimeMillis: T0 + 10_000, dryRun: false, batchSize: 20 })
    ).body.value as string;
    await eventually("the task has deleted something", async () => (await status(taskId)).progress.deleted > 0);

    const slowed = await h.post(RETHROTTLE, { taskId, rowsPerSecond: 5 });
    expect(slowed.status).toBe(200);
    expect(slowed.body.value).toMatchObject({ taskId, rowsPerSecond: 5 });
    const paced = await eventually("the worker keeps the new pace", () => status(taskId), {
      until: (s) => s.progress.rowsPerSecond === 5,
    });
    // Watched over three leases: the count may grow by what 5 rows/s allows (and the batch under way when the pace
    // was read); unthrottled, the 10,000 rows would go by the hundred. Throughout, the task reads active on its first
    // attempt (a lapsed lease reads waiting), and its row's lease is always in the future.
    const windowMs = 3 * leaseMs;
    const from = paced.progress.deleted;
    const started = Date.now();
    let last = paced;
    while (Date.now() - started < windowMs) {
      last = await status(taskId);
      expect({ state: last.state, attemptsMade: last.attemptsMade }).toEqual({ state: "active", attemptsMade: 1 });
      const { rows } = await h.database.pool.query<{ live: boolean }>(
        "SELECT lease_expires_at > clock_timestamp() AS live FROM task WHERE id = $1",
        [taskId],
      );
      expect(rows[0]!.live).toBe(true);
    }
    const elapsedS = (Date.now() - started) / 1000;
    expect(last.progress.deleted - from).toBeLessThanOrEqual(5 * elapsedS + 2 * 20);
    expect(last.progress.rowsPerSecond).toBe(5);

    // Without a throttle it runs to the end at once (within a second of the rethrottle, though it was waiting).
    expect((await h.post(RETHROTTLE, { taskId, rowsPerSecond: null })).body.value).toMatchObject({
      rowsPerSecond: null,
    });
    const done = await waitForState(status, taskId, ["completed", "failed"]);
    expect(done).toMatchObject({ state: "completed", attemptsMade: 1, result: { deleted: 10_000 } });
    expect(done.progress.rowsPerSecond).toBeNull();

    // Audited, once per change.
    const audit = await h.prisma.auditEvent.findMany({ where: { action: "task.rethrottle" }, orderBy: { id: "asc" } });
    expect(audit.map((a) => a.details)).toMatchObject([
      { type: "TRUNCATE_TIMESERIES", from: null, to: 5 },
      { type: "TRUNCATE_TIMESERIES", from: 5, to: null },
    ]);
  });

  it("starts at the pace the request asks for", async () => {
    await clear();
    await load(Array.from({ length: 100 }, (_, i) => T0 + i));
    worker = await startTruncationWorker(h);
    const taskId = (
      await h.post(TRUNCATE, {
        ...PROFILE_BODY,
        endTimeMillis: T0 + 100,
        dryRun: false,
        batchSize: 10,
        rowsPerSecond: 2,
      })
    ).body.value as string;
    const paced = await eventually("the task keeps the pace asked for", () => status(taskId), {
      until: (s) => s.progress.rowsPerSecond === 2 && s.progress.deleted > 0,
    });
    expect(paced).toMatchObject({ state: "active", rowsPerSecond: 2 });
    // 10 rows at 2 rows/s: the next batch waits 5 s. Cancel takes effect while it waits.
    await h.post("/gms/operations?action=cancelTask", { taskId });
    const end = await waitForState(status, taskId, ["cancelled", "completed", "failed"], 5_000);
    expect(end.state).toBe("cancelled");
    expect(end.progress.deleted).toBeLessThan(100);
  });

  it("refuses a pace out of bounds naming the field, and a finished task", async () => {
    const finished = await h.prisma.task.findFirstOrThrow({ where: { state: "completed" }, select: { id: true } });
    for (const [rowsPerSecond, message] of [
      [0, "rowsPerSecond: must be a whole number of rows per second from 1 to 100000000"],
      [1.5, "rowsPerSecond: must be a whole number of rows per second from 1 to 100000000"],
      [100_000_001, "rowsPerSecond: must be a whole number of rows per second from 1 to 100000000"],
    ] as const) {
      const res = await h.post(RETHROTTLE, { taskId: finished.id, rowsPerSecond });
      expect({ status: res.status, message: (res.body as { message: string }).message }).toEqual({
        status: 400,
        message: expect.stringContaining(message),
      });
    }
    const missing = await h.post(RETHROTTLE, { taskId: finished.id });
    expect(missing.status).toBe(400);
    const res = await h.post(RETHROTTLE, { taskId: finished.id, rowsPerSecond: 10 });
    expect(res.status).toBe(409);
    expect((res.body as { message: string }).message).toBe(`Task ${finished.id} is already completed`);
  });
});

const PROFILE_BODY = { entityType: "dataset", aspect: "datasetProfile" };
