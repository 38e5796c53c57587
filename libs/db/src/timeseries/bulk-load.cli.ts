/**
 * pnpm db:bulk-load: loads synthetic time-series rows into DATABASE_URL with COPY (for benchmarks, tests, and a
 * truncation long enough to watch). `--help` says how.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { EntityRegistry } from "@mdp/core";
import { bulkLoad } from "./bulk-load";

const HELP = `pnpm db:bulk-load --entity <type> --aspect <name> --rows <n> [--days <n>] [--urns <n>] [--end <epoch ms>]

Loads <n> synthetic rows of one time-series aspect into the database at DATABASE_URL, with COPY.

  --entity   the entity type, e.g. dataset
  --aspect   one of its time-series aspects in the entity registry (ENTITY_REGISTRY_PATH, else the built-in one),
             e.g. datasetProfile
  --rows     how many rows to load
  --days     over how many UTC days the rows are spread evenly, the last one the day of --end (default 100);
             each day is one partition, so a truncation drops the days wholly before its cutoff and deletes in
             batches from the day its cutoff falls in
  --urns     how many distinct entities the rows belong to (default 1000)
  --end      every row is older than this instant, in epoch milliseconds (default: now)

Example, into the database pnpm start runs (it prints its URL); a truncation at 1700000000000 then drops the days
before it, in a moment however many rows they hold:
  DATABASE_URL=postgresql://postgres@127.0.0.1:54329/metadata_admin \\
    pnpm db:bulk-load --entity dataset --aspect datasetProfile --rows 1000000 --days 20 --end 1700864000000
A truncation long enough to watch deletes in batches: put the rows in one day (--days 1) and cut inside it.`;

class UsageError extends Error {}

const OPTIONS = {
  entity: { type: "string" },
  aspect: { type: "string" },
  rows: { type: "string" },
  days: { type: "string" },
  urns: { type: "string" },
  end: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function parsed() {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function option(name: Exclude<keyof typeof OPTIONS, "help">, fallback?: string): string {
  const value = parsed()[name] ?? fallback;
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function positive(name: Exclude<keyof typeof OPTIONS, "help">, fallback?: string): number {
  const n = Number(option(name, fallback));
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number of at least 1`);
  return n;
}

/**
 * The registered time-series aspect named (its lower-case spelling too, as the API takes it): rows of any other would
 * sit in a table no API lists or truncates.
 */
function timeseriesAspect(entityType: string, aspect: string): { entityType: string; aspectName: string } {
  try {
    return EntityRegistry.load(process.env.ENTITY_REGISTRY_PATH || undefined).timeseriesIndex(entityType, aspect);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

async function main(): Promise<void> {
  if (parsed().help) {
    console.log(HELP);
    return;
  }
  const options = {
    ...timeseriesAspect(option("entity"), option("aspect")),
    rows: positive("rows"),
    days: positive("days", "100"),
    urns: positive("urns", "1000"),
    endMillis: positive("end", String(Date.now())),
    endExclusive: true,
  };
  const url = process.env.DATABASE_URL;
  if (!url) throw new UsageError("DATABASE_URL is not set (pnpm start prints the database it uses)");
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const started = Date.now();
  try {
    const result = await bulkLoad(pool, options);
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `loaded ${result.rows} rows into ${result.partitions} partition${result.partitions === 1 ? "" : "s"} in ${seconds.toFixed(1)} s (${Math.round(result.rows / seconds)} rows/s), ` +
        `all older than ${options.endMillis} (${new Date(options.endMillis).toISOString()})`,
    );
  } finally {
    await pool.end();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error("pnpm db:bulk-load --help says how to use it");
  process.exit(error instanceof UsageError ? 2 : 1);
});
