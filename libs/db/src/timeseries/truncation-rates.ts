import type { Queryable } from "./timeseries.store";

/** The kinds of work a truncation measures: rows deleted in batches, partitions dropped whole. */
export type TruncationWork = "deleteBatch" | "dropPartition";

export interface MeasuredRate {
  /** rows per second (deleteBatch) or partitions per second (dropPartition) */
  unitsPerSecond: number;
  /** finished truncations the average is over */
  samples: number;
  updatedAt: Date;
}

/** What one finished truncation measured of one kind of work: units done and the time its steps took. */
export interface TruncationSample {
  work: TruncationWork;
  units: number;
  millis: number;
}

/**
 * The average weighs the newest truncation as 1 of at most this many: a deployment whose disks or load change is
 * estimated from recent truncations, and one odd run does not set the estimate alone.
 */
export const RATE_WINDOW = 10;

/**
 * Folds a finished truncation's measurements into the deployment's rates (`truncation_rate`, one row per kind of work),
 * in the caller's transaction. Work it did not do, or did in no measurable time, is left out.
 */
export async function recordTruncationRates(db: Queryable, samples: readonly TruncationSample[]): Promise<void> {
  for (const { work, units, millis } of samples) {
    if (units <= 0 || millis <= 0) continue;
    await db.query(
      `INSERT INTO truncation_rate (kind, units_per_second, samples, updated_at) VALUES ($1, $2, 1, now())
       ON CONFLICT (kind) DO UPDATE SET
         units_per_second = (truncation_rate.units_per_second * least(truncation_rate.samples, $3 - 1)
                             + excluded.units_per_second) / (least(truncation_rate.samples, $3 - 1) + 1),
         samples = truncation_rate.samples + 1, updated_at = now()`,
      [work, (units * 1000) / millis, RATE_WINDOW],
    );
  }
}

/** The rates measured so far, by kind of work (a kind no truncation did yet is absent). */
export async function truncationRates(db: Queryable): Promise<Map<TruncationWork, MeasuredRate>> {
  const { rows } = await db.query<{
    kind: TruncationWork;
    units_per_second: number;
    samples: number;
    updated_at: Date;
  }>("SELECT kind, units_per_second, samples, updated_at FROM truncation_rate");
  return new Map(
    rows.map((r) => [r.kind, { unitsPerSecond: r.units_per_second, samples: r.samples, updatedAt: r.updated_at }]),
  );
}
