/**
 * bench/truncate: bulk-loaded rows truncated through the real API and worker processes.
 * - 50% and 90% at each size of BENCH_TRUNCATE_SIZES (1M and 5M rows; 20M when asked): against one
 *   `DELETE ... WHERE timestamp_millis < cutoff` on an identically partitioned twin (the same day partitions, rows
 *   and indexes), measured in the same run. Target: <= 0.3x the raw DELETE's time. Printed with the figure of time
 *   against partitions touched and rows deleted.
 * - at BENCH_TRUNCATE_ROWS (the largest size), unless BENCH_TRUNCATE_EXTRAS=0:
 *   - 1% (cutoff inside the oldest partition) in batches of 10,000: rows/s and the duration of every batch
 *     transaction (from the worker's debug log). Targets: >= 200k rows/s, no batch over 250 ms at p99.
 *   - dry-run latency, exact numbers. Target: p50 <= 100 ms.
 *   - getIndexSizes with twice the rows stored (a second aspect of the same size). Target: under 100 ms.
 */
import { performance } from "node:perf_hooks";
import { bulkLoad, createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { productionSetup } from "../support/production";
import { printReport } from "../support/report";

const SIZES = (process.env.BENCH_TRUNCATE_SIZES ?? "1000000,5000000").split(",").map(Number);
const ROWS = Number(process.env.BENCH_TRUNCATE_ROWS ?? Math.max(...SIZES));
if (!SIZES.includes(ROWS)) SIZES.push(ROWS);
const EXTRAS = process.env.BENCH_TRUNCATE_EXTRAS !== "0";
/** The cuts at every size (50% and 90%); `BENCH_TRUNCATE_CUTS=0.9` runs one, each cut being its own load. */
const CUTS = (process.env.BENCH_TRUNCATE_CUTS ?? "0.5,0.9").split(",").map(Number);
const DAYS = 50; // 1% of the rows is half of the oldest day; 50% and 90% cut 25 and 45 whole days
const END = Date.UTC(2026, 9, 1);
const FIRST_DAY = END - (DAYS - 1) * DAY_MILLIS;
const PARENT = "ts_dataset_datasetProfile";
const TABLE = `timeseries."${PARENT}"`;
const production = productionSetup();
const headers = production.systemClient();

/** The timestamp below which `fraction` of the rows lie (the loader spreads rows evenly). */
const cutoffFor = (fraction: number) => FIRST_DAY + Math.floor(fraction * DAYS * DAY_MILLIS);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

interface Timed {
  ms: number;
  deleted: number;
}
interface Cut {
  rows: number;
  fraction: number;
  partitions: number;
  ours: Timed;
  floor: Timed;
}

export async function benchTruncate(): Promise<void> {
  const db = await createTestDatabase("bench_truncate");
  const database = createDatabase(db.url);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-truncate"),
    PORT: String(port),
  };
  const gateway = startService("gateway", { ...env, LOG_LEVEL: "warn" });
  const worker = startService("truncation-worker", { ...env, LOG_LEVEL: "debug" });
  try {
    await Promise.all([waitUntilReady(baseUrl, gateway), waitForOutput(worker, "worker running")]);
    const api = async (action: string, body: unknown) => {
      const res = await fetch(`${baseUrl}/gms/operations?action=${action}`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { value: unknown };
      if (res.status !== 200) throw new Error(`${action}: ${JSON.stringify(json)}`);
      return json.value;
    };
    const truncate = async (cutoff: number, batchSize = 10_000) => {
      await database.pool.query("CHECKPOINT"); // both sides start with no dirty pages to flush
      const started = performance.now();
      const taskId = (await api("truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: cutoff,
        dryRun: false,
        batchSize,
      })) as string;
      for (;;) {
        const status = (await api("getTaskStatus", { taskId })) as { state: string; progress: { deleted: number } };
        if (status.state === "completed")
          return { ms: performance.now() - started, deleted: status.progress.deleted, taskId };
        if (status.state !== "waiting" && status.state !== "active") throw new Error(`task ${status.state}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };

    /** The 1% batched cut, dry runs and getIndexSizes, on the table as loaded. */
    const extras = async (rows: number) => {
      // getIndexSizes with twice the rows stored: a second aspect of the same size.
      await database.pool.query(`DROP TABLE IF EXISTS timeseries."ts_dataset_operation"`);
      await database.pool.query("DELETE FROM timeseries.aspect_table WHERE aspect_name = 'operation'");
      await bulkLoad(database.pool, {
        entityType: "dataset",
        aspectName: "operation",
        rows,
        days: DAYS,
        endMillis: END,
        urns: 1000,
      });
      // The first call is reported apart: a new PostgreSQL connection builds its catalog cache for every partition once.
      const coldStarted = performance.now();
      await api("getIndexSizes", {});
      const sizeCold = performance.now() - coldStarted;
      const sizeCalls: number[] = [];
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        await api("getIndexSizes", {});
        sizeCalls.push(performance.now() - started);
      }
      const dryRuns: number[] = [];
      let report = "";
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        report = (await api("truncateTimeseriesAspect", {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: cutoffFor(0.5) + 12_345,
        })) as string;
        dryRuns.push(performance.now() - started);
      }
      // 1% in batches: the cutoff lies inside the oldest partition.
      const batched = await truncate(cutoffFor(0.01));
      const steps = stepDurations(worker.output(), batched.taskId);
      // The batched path's own rate: rows over the time spent inside batch transactions. End to end adds the request,
      // the queue, planning and polling, which a small task cannot amortize; both are printed.
      const rowsPerSecond = batched.deleted / (steps.reduce((a, b) => a + b, 0) / 1000);
      const endToEnd = batched.deleted / (batched.ms / 1000);
      return (
        `  1% in 10k batches: ${batched.deleted} rows, ${Math.round(rowsPerSecond)} rows/s inside batch transactions (target >= 200000: ${rowsPerSecond >= 200_000 ? "MET" : "NOT MET"}),\n` +
        `    ${Math.round(endToEnd)} rows/s end to end (${s(batched.ms)} from request to completed);\n` +
        `    ${steps.length} batch transactions, p50 ${median(steps).toFixed(1)} ms, p99 ${percentile(steps, 99).toFixed(1)} ms, max ${Math.max(...steps).toFixed(1)} ms (target p99 <= 250 ms: ${percentile(steps, 99) <= 250 ? "MET" : "NOT MET"})\n` +
        `  dry run on ${rows} rows: p50 ${median(dryRuns).toFixed(1)} ms, p99 ${percentile(dryRuns, 99).toFixed(1)} ms (target p50 <= 100 ms: ${median(dryRuns) <= 100 ? "MET" : "NOT MET"})\n` +
        `    "${report}"\n` +
        `  getIndexSizes with ${2 * rows} rows stored: p50 ${median(sizeCalls).toFixed(1)} ms, p99 ${percentile(sizeCalls, 99).toFixed(1)} ms (target < 100 ms: ${percentile(sizeCalls, 99) < 100 ? "MET" : "NOT MET"}); first call ${sizeCold.toFixed(1)} ms\n`
      );
    };

    const results: Cut[] = [];
    let extrasReport = "";
    for (const rows of SIZES) {
      for (const fraction of CUTS) {
        const loadStarted = performance.now();
        await load(database, rows);
        process.stdout.write(
          `\nbench/truncate: ${rows} rows over ${DAYS} days loaded in ${s(performance.now() - loadStarted)}, cut ${fraction * 100}%\n`,
        );
        if (rows === ROWS && fraction === CUTS[0] && EXTRAS) extrasReport = await extras(rows);
        // The twin is copied after the extras' 1% cut, so both sides hold the same rows.
        const floor = await partitionedDelete(database, cutoffFor(fraction));
        const ours = await truncate(cutoffFor(fraction));
        if (ours.deleted !== floor.deleted) throw new Error(`deleted ${ours.deleted} rows, the floor ${floor.deleted}`);
        results.push({ rows, fraction, partitions: Math.round(fraction * DAYS), ours, floor });
        process.stdout.write(`  ours ${s(ours.ms)}, floor ${s(floor.ms)} (${floor.deleted} rows each)\n`);
      }
    }

    printReport(
      "bench/truncate",
      "one DELETE ... WHERE timestamp_millis < cutoff on an identically partitioned twin (same day partitions, rows and indexes; vacuumed), same run",
      results.map((r) => ({
        name: `truncate ${r.fraction * 100}% of ${r.rows} rows (API + worker)`,
        value: `${s(r.ours.ms)} vs ${s(r.floor.ms)}`,
        ratio: r.ours.ms / r.floor.ms,
        target: "<= 0.3",
        met: r.ours.ms / r.floor.ms <= 0.3,
      })),
    );
    // The figure: our time follows the partitions dropped; the floor's follows the rows deleted.
    process.stdout.write(
      "\n  time against partitions touched and rows deleted:\n" +
        "  rows stored  cut  partitions dropped  rows deleted     ours  ours per partition    floor  floor per million rows\n",
    );
    for (const r of results)
      process.stdout.write(
        `  ${String(r.rows).padStart(11)}  ${`${r.fraction * 100}%`.padStart(3)}  ${String(r.partitions).padStart(18)}  ${String(r.ours.deleted).padStart(12)}  ${s(r.ours.ms).padStart(7)}  ${`${(r.ours.ms / r.partitions).toFixed(1)} ms`.padStart(18)}  ${s(r.floor.ms).padStart(7)}  ${s(r.floor.ms / (r.floor.deleted / 1e6)).padStart(22)}\n`,
      );
    process.stdout.write(extrasReport);
  } finally {
    await Promise.all([gateway.stop(), worker.stop()]);
    await database.close();
    await db.drop();
  }
}

/** A fresh table of `rows` rows (whatever truncation left is dropped first). */
async function load(database: Database, rows: number): Promise<void> {
  await database.pool.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await database.pool.query("DELETE FROM timeseries.partition WHERE parent_table = $1", [PARENT]);
  await database.pool.query("DELETE FROM timeseries.aspect_table WHERE table_name = $1", [PARENT]);
  await bulkLoad(database.pool, {
    entityType: "dataset",
    aspectName: "datasetProfile",
    rows,
    days: DAYS,
    endMillis: END,
    urns: 1000,
  });
}

/**
 * The floor: a twin of our table partitioned on the same day bounds, with the same columns and indexes, filled with
 * the same rows by INSERT ... SELECT and vacuumed; then one DELETE through its parent, timed.
 */
async function partitionedDelete(database: Database, cutoff: number): Promise<Timed> {
  const q = (sql: string, params?: unknown[]) => database.pool.query(sql, params);
  await q("DROP TABLE IF EXISTS bench_floor");
  await q(
    `CREATE TABLE bench_floor (urn TEXT NOT NULL, timestamp_millis BIGINT NOT NULL, value JSONB NOT NULL,
       ingested_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP) PARTITION BY RANGE (timestamp_millis)`,
  );
  await q("CREATE INDEX ON bench_floor (timestamp_millis)");
  await q("CREATE INDEX ON bench_floor (urn, timestamp_millis DESC)");
  const bounds = await q(
    `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${TABLE}'::regclass ORDER BY c.relname`,
  );
  for (const [i, row] of (bounds.rows as { bound: string }[]).entries())
    await q(`CREATE TABLE bench_floor_p${i} PARTITION OF bench_floor ${row.bound}`);
  await q(`INSERT INTO bench_floor SELECT urn, timestamp_millis, value, ingested_at FROM ${TABLE}`);
  await q("VACUUM ANALYZE bench_floor");
  await q("CHECKPOINT");
  const started = performance.now();
  const { rowCount } = await q("DELETE FROM bench_floor WHERE timestamp_millis < $1", [cutoff]);
  const ms = performance.now() - started;
  await q("DROP TABLE bench_floor");
  return { ms, deleted: rowCount ?? 0 };
}

/** Durations of the task's batch transactions, from the worker's debug log. */
function stepDurations(output: string, taskId: string): number[] {
  return output
    .split("\n")
    .filter((line) => line.includes('"truncate step"') && line.includes(taskId))
    .map((line) => (JSON.parse(line) as { stepMs: number }).stepMs);
}
