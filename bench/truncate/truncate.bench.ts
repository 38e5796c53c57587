/**
 * bench/truncate: 5 million bulk-loaded rows, truncated through the real API and worker processes.
 * - 50% and 90%: against one raw `DELETE ... WHERE timestamp_millis < cutoff` on an identical plain table (same
 *   columns and indexes, same rows), measured in the same run. Target: <= 0.3x the raw DELETE's time.
 * - 1% (cutoff inside the oldest partition) in batches of 10,000: rows/s and the duration of every batch
 *   transaction (from the worker's debug log). Targets: >= 200k rows/s, no batch over 250 ms at p99.
 * - dry-run latency on 5M rows, exact numbers. Target: p50 <= 100 ms.
 * - getIndexSizes with 10M rows stored (a second aspect of 5M). Target: under 100 ms.
 */
import { performance } from "node:perf_hooks";
import { bulkLoad, createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { productionSetup } from "../support/production";
import { printReport } from "../support/report";

const ROWS = Number(process.env.BENCH_TRUNCATE_ROWS ?? 5_000_000);
const DAYS = 50; // 100k rows a day: 1% of the rows is half of the oldest day
const END = Date.UTC(2026, 9, 1);
const FIRST_DAY = END - (DAYS - 1) * DAY_MILLIS;
const TABLE = 'timeseries."ts_dataset_datasetProfile"';
const production = productionSetup();
const headers = production.systemClient();

/** The timestamp below which `fraction` of the rows lie (the loader spreads rows evenly). */
const cutoffFor = (fraction: number) => FIRST_DAY + Math.floor(fraction * DAYS * DAY_MILLIS);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

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

    process.stdout.write(`\nbench/truncate: loading ${ROWS} rows over ${DAYS} days...\n`);
    await load(database);

    // getIndexSizes with 10M rows stored: a second aspect of the same size.
    await bulkLoad(database.pool, {
      entityType: "dataset",
      aspectName: "operation",
      rows: ROWS,
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

    // Dry run, on the full table.
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

    // 50%: against a raw DELETE on a plain copy of the same rows.
    const raw50 = await rawDelete(database, cutoffFor(0.5));
    const api50 = await truncate(cutoffFor(0.5));

    // 90%: on a fresh load.
    await load(database);
    const raw90 = await rawDelete(database, cutoffFor(0.9));
    const api90 = await truncate(cutoffFor(0.9));

    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    // The batched path's own rate: rows over the time spent inside batch transactions. End to end adds the request,
    // the queue, planning and polling, which a 50,000-row task cannot amortize; both are printed.
    const rowsPerSecond = batched.deleted / (steps.reduce((a, b) => a + b, 0) / 1000);
    const endToEnd = batched.deleted / (batched.ms / 1000);
    printReport(
      "bench/truncate",
      `raw DELETE on a plain table: 50% ${s(raw50.ms)} (${raw50.deleted} rows), 90% ${s(raw90.ms)} (${raw90.deleted} rows)`,
      [
        {
          name: "truncate 50% (API + worker)",
          value: `${s(api50.ms)} ${api50.deleted} rows`,
          ratio: api50.ms / raw50.ms,
          target: "<= 0.3",
          met: api50.ms / raw50.ms <= 0.3,
        },
        {
          name: "truncate 90% (API + worker)",
          value: `${s(api90.ms)} ${api90.deleted} rows`,
          ratio: api90.ms / raw90.ms,
          target: "<= 0.3",
          met: api90.ms / raw90.ms <= 0.3,
        },
      ],
    );
    process.stdout.write(
      `  1% in 10k batches: ${batched.deleted} rows, ${Math.round(rowsPerSecond)} rows/s inside batch transactions (target >= 200000: ${rowsPerSecond >= 200_000 ? "met" : "NOT MET"}),\n` +
        `    ${Math.round(endToEnd)} rows/s end to end (${s(batched.ms)} from request to completed);\n` +
        `    ${steps.length} batch transactions, p50 ${median(steps).toFixed(1)} ms, p99 ${percentile(steps, 99).toFixed(1)} ms, max ${Math.max(...steps).toFixed(1)} ms (target p99 <= 250 ms: ${percentile(steps, 99) <= 250 ? "met" : "NOT MET"})\n` +
        `  dry run on ${ROWS} rows: p50 ${median(dryRuns).toFixed(1)} ms, p99 ${percentile(dryRuns, 99).toFixed(1)} ms (target p50 <= 100 ms: ${median(dryRuns) <= 100 ? "met" : "NOT MET"})\n` +
        `    "${report}"\n` +
        `  getIndexSizes with ${2 * ROWS} rows stored: p50 ${median(sizeCalls).toFixed(1)} ms, p99 ${percentile(sizeCalls, 99).toFixed(1)} ms (target < 100 ms: ${percentile(sizeCalls, 99) < 100 ? "met" : "NOT MET"}); first call ${sizeCold.toFixed(1)} ms\n`,
    );
  } finally {
    await Promise.all([gateway.stop(), worker.stop()]);
    await database.close();
    await db.drop();
  }
}

/** A fresh table of ROWS rows (whatever truncation left is dropped first). */
async function load(database: Database): Promise<void> {
  await database.pool.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await database.pool.query("DELETE FROM timeseries.aspect_table");
  await bulkLoad(database.pool, {
    entityType: "dataset",
    aspectName: "datasetProfile",
    rows: ROWS,
    days: DAYS,
    endMillis: END,
    urns: 1000,
  });
}

/** The baseline: the same rows in a plain table with the same indexes, and one DELETE. */
async function rawDelete(database: Database, cutoff: number): Promise<{ ms: number; deleted: number }> {
  await database.pool.query("DROP TABLE IF EXISTS bench_plain");
  await database.pool.query(
    `CREATE TABLE bench_plain AS SELECT urn, timestamp_millis, value, ingested_at FROM ${TABLE}`,
  );
  await database.pool.query("CREATE INDEX ON bench_plain (timestamp_millis)");
  await database.pool.query("CREATE INDEX ON bench_plain (urn, timestamp_millis DESC)");
  await database.pool.query("VACUUM ANALYZE bench_plain");
  await database.pool.query("CHECKPOINT");
  const started = performance.now();
  const { rowCount } = await database.pool.query("DELETE FROM bench_plain WHERE timestamp_millis < $1", [cutoff]);
  const ms = performance.now() - started;
  await database.pool.query("DROP TABLE bench_plain");
  return { ms, deleted: rowCount ?? 0 };
}

/** Durations of the task's batch transactions, from the worker's debug log. */
function stepDurations(output: string, taskId: string): number[] {
  return output
    .split("\n")
    .filter((line) => line.includes('"truncation step"') && line.includes(taskId))
    .map((line) => (JSON.parse(line) as { stepMs: number }).stepMs);
}
