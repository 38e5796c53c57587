import { z } from "zod";
import {
  partitionBytes,
  truncationRates,
  type Queryable,
  type TruncationPlan,
  type MeasuredRate,
  type TruncationWork,
} from "@mdp/db";

/**
 * The dry run's plan lists at most this many partitions to drop (the oldest); the counts, rows and bytes cover all of
 * them. An aspect may hold up to TIMESERIES_MAX_PARTITIONS_PER_ASPECT (36,600) day partitions: the answer stays
 * about 20 KB.
 */
export const MAX_PLAN_PARTITIONS = 100;

/**
 * What the estimate assumes before a truncation of this deployment finished the kind of work (the plan says so):
 * rows per second of batch deletes, partitions per second of drops. Deliberately slow: a shared 2-core development
 * machine measured about 42,000 rows/s in 10,000-row batches and 22 ms per dropped partition (bench/truncate, 200,000
 * rows); the measured rates replace them after the first truncation that did such work.
 */
export const DEFAULT_RATES: Record<TruncationWork, number> = { deleteBatch: 10_000, dropPartition: 20 };

/** A truncation's pace (rethrottleTask, truncateTimeseriesAspect's rowsPerSecond): whole rows per second. */
export const MIN_ROWS_PER_SECOND = 1;
export const MAX_ROWS_PER_SECOND = 100_000_000;

const rate = z.object({
  value: z.number().describe("units per second"),
  source: z.enum(["measured", "default"]).describe("measured by finished truncations here, or the stated default"),
  samples: z.number().int().describe("finished truncations the measured value averages (0: the default)"),
});

/** The dry run's structured plan, beside `value` (its sentence). */
export const dryRunPlan = z.object({
  totalRows: z.number().int(),
  toDelete: z.number().int(),
  strategy: z.enum(["reindex", "deleteByQuery"]).describe("the name DataHub's clients read, as in `value`"),
  strategyReason: z.string(),
  partitionsToDrop: z.object({
    count: z.number().int(),
    rows: z.number().int(),
    bytes: z.number().int().describe("table and index bytes on disk now: what dropping them frees"),
    listed: z
      .array(
        z.object({
          partition: z.string(),
          fromMillis: z.number().int(),
          toMillis: z.number().int().describe("exclusive"),
          rows: z.number().int(),
          bytes: z.number().int(),
        }),
      )
      .describe(`the oldest, at most ${MAX_PLAN_PARTITIONS}`),
    omitted: z.number().int().describe("partitions to drop not listed (counted in count, rows and bytes)"),
  }),
  boundary: z
    .object({
      partition: z.string(),
      fromMillis: z.number().int(),
      toMillis: z.number().int(),
      rowsToDelete: z.number().int(),
      rowsInPartition: z.number().int(),
      batchSize: z.number().int(),
      batches: z.number().int(),
    })
    .nullable()
    .describe("the partition the cutoff falls inside: its older rows are deleted in batches"),
  estimate: z.object({
    seconds: z.number(),
    dropSeconds: z.number(),
    deleteSeconds: z.number(),
    rowsPerSecond: z.number().int().nullable().describe("the pace asked for (null: unthrottled)"),
    rates: z.object({ deleteRowsPerSecond: rate, dropPartitionsPerSecond: rate }),
    note: z.string(),
  }),
});
export type DryRunPlan = z.output<typeof dryRunPlan>;

export interface PlanOptions {
  batchSize: number;
  rowsPerSecond?: number | null;
  /** the strategy forced by forceReindex / forceDeleteByQuery */
  forced?: "reindex" | "deleteByQuery";
}

/**
 * The dry run's plan from planTruncation's: each partition to drop with its rows and on-disk bytes, the boundary's
 * batches, the strategy and why, and the time it should take at the rates finished truncations measured here.
 */
export async function dryRunPlanOf(db: Queryable, plan: TruncationPlan, options: PlanOptions): Promise<DryRunPlan> {
  const whole = plan.wholePartitions;
  const [sizes, measured] = await Promise.all([
    partitionBytes(
      db,
      whole.map((p) => p.table),
    ),
    truncationRates(db),
  ]);
  const bytesOf = (table: string) => {
    const size = sizes.get(table);
    return size ? size.tableBytes + size.indexBytes : 0;
  };
  const dropRows = whole.reduce((sum, p) => sum + p.rowCount, 0);
  const boundary = plan.boundary && {
    partition: plan.boundary.partition.table,
    fromMillis: plan.boundary.partition.fromMillis,
    toMillis: plan.boundary.partition.toMillis,
    rowsToDelete: plan.boundary.rowsBefore,
    rowsInPartition: plan.boundary.partition.rowCount,
    batchSize: options.batchSize,
    batches: Math.ceil(plan.boundary.rowsBefore / options.batchSize),
  };
  const rateOf = (work: TruncationWork) => rateAnswer(measured.get(work), DEFAULT_RATES[work]);
  const deleteRate = rateOf("deleteBatch");
  const dropRate = rateOf("dropPartition");
  const pace = options.rowsPerSecond ?? null;
  const deletePerSecond = pace === null ? deleteRate.value : Math.min(deleteRate.value, pace);
  const deleteSeconds = (boundary?.rowsToDelete ?? 0) / deletePerSecond;
  const dropSeconds = whole.length / dropRate.value;
  const defaults = [deleteRate.source === "default" && "batch deletes", dropRate.source === "default" && "drops"];
  const unmeasured = defaults.filter(Boolean).join(" and ");
  return {
    totalRows: plan.totalRows,
    toDelete: plan.toDelete,
    strategy: options.forced ?? plan.strategy,
    strategyReason: strategyReason(plan, options),
    partitionsToDrop: {
      count: whole.length,
      rows: dropRows,
      bytes: whole.reduce((sum, p) => sum + bytesOf(p.table), 0),
      listed: whole.slice(0, MAX_PLAN_PARTITIONS).map((p) => ({
        partition: p.table,
        fromMillis: p.fromMillis,
        toMillis: p.toMillis,
        rows: p.rowCount,
        bytes: bytesOf(p.table),
      })),
      omitted: Math.max(0, whole.length - MAX_PLAN_PARTITIONS),
    },
    boundary,
    estimate: {
      seconds: round(deleteSeconds + dropSeconds),
      dropSeconds: round(dropSeconds),
      deleteSeconds: round(deleteSeconds),
      rowsPerSecond: pace,
      rates: { deleteRowsPerSecond: deleteRate, dropPartitionsPerSecond: dropRate },
      note:
        (unmeasured
          ? `No truncation on this deployment has measured ${unmeasured} yet: the estimate uses the default ` +
            `rates (${DEFAULT_RATES.deleteBatch} rows/s, ${DEFAULT_RATES.dropPartition} partitions/s). `
          : "From the rates the last finished truncations measured here. ") +
        (pace === null ? "" : `Batch deletes are held to ${pace} rows/s. `) +
        "Rows written meanwhile, and the load of the server, change it.",
    },
  };
}

function rateAnswer(measured: MeasuredRate | undefined, fallback: number) {
  return measured
    ? { value: round(measured.unitsPerSecond), source: "measured" as const, samples: measured.samples }
    : { value: fallback, source: "default" as const, samples: 0 };
}

function strategyReason(plan: TruncationPlan, options: PlanOptions): string {
  const drops = plan.wholePartitions.filter((p) => p.rowCount > 0).length;
  const what =
    `${plan.wholePartitions.length} day partition(s) wholly before the cutoff are dropped whole` +
    (plan.boundary ? `, and ${plan.boundary.rowsBefore} row(s) of the day it falls inside are deleted in batches` : "");
  if (options.forced) {
    return `Forced by ${options.forced === "reindex" ? "forceReindex" : "forceDeleteByQuery"}: it names the strategy only; ${what}.`;
  }
  if (plan.toDelete === 0 && plan.wholePartitions.length === 0) return "Nothing is older than the cutoff.";
  if (plan.strategy === "reindex") {
    return drops > 0
      ? `Reindex: ${what} (DataHub rebuilds the index without the deleted rows; here whole days go at once).`
      : `Reindex: more than half of the aspect's rows go; ${what}.`;
  }
  return `Delete by query: no day wholly before the cutoff holds rows and under half of the aspect's rows go; ${what}.`;
}

const round = (n: number) => Math.round(n * 100) / 100;
