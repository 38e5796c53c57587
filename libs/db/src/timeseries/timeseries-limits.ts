import { AppError, badInput, conflict } from "@mdp/core";

/**
 * What one caller may make the time-series store do. Every day a row lands on is a partition (a table and its indexes):
 * PostgreSQL holds a lock per partition and index a statement touches until its transaction ends, in one lock table
 * shared by every connection (max_locks_per_transaction x max_connections slots, 6,400 by default). So the number of
 * days one write touches, the days a caller may reach, and the partitions one aspect may hold are all bounded.
 */
export interface TimeseriesLimits {
  /** distinct (aspect, UTC day) pairs one write (a request, a batch) may touch */
  maxDaysPerWrite: number;
  /** day partitions one aspect may hold in all, empty ones included */
  maxPartitionsPerAspect: number;
  /** how far after now a timestampMillis may lie (clock skew of the writer) */
  maxFutureMillis: number;
}

export const DEFAULT_TIMESERIES_LIMITS: TimeseriesLimits = {
  maxDaysPerWrite: 100,
  maxPartitionsPerAspect: 1_000,
  maxFutureMillis: 86_400_000,
};

/** The most rows one getTimeseriesAspectValues read returns. */
export const MAX_VALUES_PER_READ = 10_000;

/** A `timestampMillis` a write may carry: not before 1970 (epoch milliseconds), not after now plus the allowed skew. */
export function checkTimestamp(timestampMillis: number, field: string, limits: TimeseriesLimits, now = Date.now()) {
  if (!Number.isSafeInteger(timestampMillis) || timestampMillis < 0) {
    throw badInput(`${field} must be a whole number of epoch milliseconds, not before 1970-01-01T00:00:00.000Z (0)`);
  }
  const latest = now + limits.maxFutureMillis;
  if (timestampMillis > latest) {
    throw badInput(
      `${field} ${timestampMillis} is in the future: it may be at most ${limits.maxFutureMillis} ms after now ` +
        `(${new Date(latest).toISOString()}, TIMESERIES_MAX_FUTURE_MS)`,
    );
  }
}

export function tooManyDays(days: number, limits: TimeseriesLimits): AppError {
  return badInput(
    `This write puts time-series rows on ${days} distinct days (counted per aspect); one write may touch at most ` +
      `${limits.maxDaysPerWrite} (TIMESERIES_MAX_DAYS_PER_WRITE). Split it into batches of fewer days.`,
    { limit: "TIMESERIES_MAX_DAYS_PER_WRITE", max: limits.maxDaysPerWrite, days },
  );
}

export function partitionBudgetExceeded(aspect: string, existing: number, needed: number, max: number): AppError {
  return conflict(
    `Time-series aspect ${aspect} holds ${existing} day partitions and this write needs ${needed} more; one aspect ` +
      `may hold at most ${max} (TIMESERIES_MAX_PARTITIONS_PER_ASPECT). Truncate older rows ` +
      `(truncateTimeseriesAspect) or write to days that already hold rows.`,
  );
}

/** PostgreSQL's out_of_memory, which "out of shared memory" (its lock table full) is reported as. */
const OUT_OF_MEMORY = "53200";

/**
 * Whether `error` is PostgreSQL running out of lock slots or memory: the server's state, not the request's fault, so
 * a 503 the caller may retry, never a 500. The bounds above keep one caller from causing it; many at once still may.
 */
export function isDatabaseResourceExhausted(error: unknown): boolean {
  const e = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | null;
  return e?.code === OUT_OF_MEMORY || e?.meta?.driverAdapterError?.cause?.originalCode === OUT_OF_MEMORY;
}

export const databaseResourceExhausted = () =>
  new AppError(
    "SERVICE_UNAVAILABLE",
    "The database is out of lock or memory resources (too many tables touched at once); retry shortly.",
    { retryAfterSeconds: 2 },
  );
