/**
 * pnpm db:bulk-load --entity dataset --aspect datasetProfile --rows 1000000 [--days 100] [--urns 1000] [--end <ms>]
 * Loads synthetic time-series rows into DATABASE_URL with COPY (for benchmarks and tests).
 */
import pg from "pg";
import { bulkLoad } from "./bulk-load";

function option(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? process.argv[i + 1] : fallback;
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}

function positive(name: string, fallback?: string): number {
  const n = Number(option(name, fallback));
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a whole number of at least 1`);
  return n;
}

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL is not set");
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const started = Date.now();
  try {
    const result = await bulkLoad(pool, {
      entityType: option("entity"),
      aspectName: option("aspect"),
      rows: positive("rows"),
      days: positive("days", "100"),
      urns: positive("urns", "1000"),
      endMillis: Number(option("end", String(Date.now()))),
    });
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `loaded ${result.rows} rows into ${result.partitions} partitions in ${seconds.toFixed(1)} s (${Math.round(result.rows / seconds)} rows/s)`,
    );
  } finally {
    await pool.end();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
