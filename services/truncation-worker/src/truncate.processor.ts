import { performance } from "node:perf_hooks";
import { z } from "zod";
import {
  deleteBatch,
  dropPartitions,
  PARTITIONS_PER_DROP,
  planTruncation,
  recordTruncationRates,
  type Database,
  type TimeseriesStore,
  type TimeseriesPartition,
} from "@mdp/db";
import type { Logger } from "@mdp/core";
import { truncatePayload, type JobHandler, type Producer } from "@mdp/queues";
import {
  defineTask,
  reconciledKind,
  TaskRunner,
  type ReconciledKind,
  type TaskLifecycle,
  type TaskRow,
} from "@mdp/tasks";

export { PROGRESS_INTERVAL_MS } from "@mdp/tasks";

export interface TruncateDeps {
  db: Database;
  store: TimeseriesStore;
  /** the task lifecycle (claims, progress, endings); its leases are renewed by the process (keepLeases) */
  tasks: TaskLifecycle;
  logger: Logger;
  /** aborted when the process is asked to stop: the job hands itself back between steps */
  shutdownSignal: AbortSignal;
  /** the least time between two progress reports to the job (Bull Board's bar); default PROGRESS_INTERVAL_MS */
  progressIntervalMs?: number;
}

const count = z.number().int().nonnegative().default(0);
const bytes = z.object({ tableBytes: z.number(), indexBytes: z.number() });
const truncateProgress = z.object({
  deleted: count,
  toDelete: count,
  batches: count,
  percent: z.number().default(0),
  /** the pace being kept (rows per second of batch deletes; rethrottleTask), null: as fast as it goes */
  rowsPerSecond: z.number().nullable().default(null),
  partitionsDropped: count,
  /** what the steps took, for the deployment's measured rates (truncation_rate) once the task completes */
  batchRows: count,
  batchMs: z.number().default(0),
  dropMs: z.number().default(0),
  /** the aspect's partitions on disk when the task first planned, and when it found nothing left */
  bytesBefore: bytes.nullable().default(null),
  bytesAfter: bytes.nullable().default(null),
});
export type TruncateProgress = z.output<typeof truncateProgress>;

/** One step: drop a group of whole partitions, or delete one batch from the partition the cutoff falls inside. */
type TruncateStep = { drop: TimeseriesPartition[] } | { deleteFrom: TimeseriesPartition };

/**
 * Deletes the rows of one time-series aspect older than the cutoff: partitions that lie entirely before it are dropped
 * whole, the partition it falls inside is deleted from in transactions of at most `batchSize` rows. Each plan and step
 * commits with the task's progress under the attempt's lease (the runner), so a worker that dies mid-task leaves an
 * exact count, and the next attempt plans again from what is left: it never deletes a row at or after the cutoff, nor
 * counts a row twice. After every plan `toDelete` is what this task deleted plus what is left, so percent is right
 * after a resume, and a task that overlapped another on the same aspect ends with what it deleted itself.
 */
export function truncateTask(store: TimeseriesStore) {
  return defineTask({
    ...truncateKind,
    progress: truncateProgress,
    percent: (p) => p.percent,
    deadline: (input, startedAt) =>
      input.timeoutSeconds === undefined ? undefined : startedAt.getTime() + input.timeoutSeconds * 1000,
    timedOut: (input, p) =>
      `Timed out after ${input.timeoutSeconds} s; ${p.deleted} rows were deleted before the timeout`,
    // Rows can arrive for old days while we work: plan again until nothing older than the cutoff is left. Partitions
    // wholly before it go even when they hold no rows (a write that failed after creating them, a day an earlier
    // truncation emptied): they delete nothing, but count against TIMESERIES_MAX_PARTITIONS_PER_ASPECT. A plan again
    // after dropping them finds none (dropped ones leave the bookkeeping in the same transaction).
    async plan({ input, progress: stored, deadline }, client) {
      const ref = { entityType: input.entityType, aspectName: input.aspect };
      const partitions = await store.partitions(ref);
      // Sizes on the pool, outside the plan's transaction (measuring locks each partition until its statement ends),
      // under the task's deadline: a statement timeout there ends the task timed out, as in the plan itself.
      const measure = () =>
        store.relationBytes(
          partitions.map((p) => p.table),
          deadline,
        );
      const bytesBefore = stored.bytesBefore ?? (await measure());
      const plan = await planTruncation(client, partitions, input.endTimeMillis);
      const steps: TruncateStep[] = [];
      for (let i = 0; i < plan.wholePartitions.length; i += PARTITIONS_PER_DROP) {
        steps.push({ drop: plan.wholePartitions.slice(i, i + PARTITIONS_PER_DROP) });
      }
      if (plan.boundary) steps.push({ deleteFrom: plan.boundary.partition });
      const nothingLeft = plan.toDelete === 0 && plan.wholePartitions.length === 0;
      let bytesAfter: TruncateProgress["bytesAfter"] = null;
      if (nothingLeft) {
        // The last plan: what the task freed, and how fast its work went on this deployment (the dry run's estimate).
        bytesAfter = stored.bytesBefore === null ? bytesBefore : await measure();
        await recordTruncationRates(client, [
          { work: "deleteBatch", units: stored.batchRows, millis: stored.batchMs },
          { work: "dropPartition", units: stored.partitionsDropped, millis: stored.dropMs },
        ]);
      }
      return {
        steps: nothingLeft ? [] : steps,
        progress: (stored) => {
          const toDelete = stored.deleted + plan.toDelete;
          return {
            ...stored,
            toDelete,
            percent: percentOf(stored.deleted, toDelete),
            bytesBefore: stored.bytesBefore ?? bytesBefore,
            bytesAfter,
          };
        },
      };
    },
    async step({ input }, step: TruncateStep, client) {
      const started = performance.now();
      if ("drop" in step) {
        const deleted = await dropPartitions(client, step.drop);
        const ms = performance.now() - started;
        return {
          progress: (stored) => ({
            ...addStep(stored, deleted, true),
            partitionsDropped: stored.partitionsDropped + step.drop.length,
            dropMs: stored.dropMs + ms,
          }),
          log: { deleted },
        };
      }
      const deleted = await deleteBatch(client, step.deleteFrom, input.endTimeMillis, input.batchSize);
      const ms = performance.now() - started;
      // The batch after one that deleted exactly batchSize rows may find none: it ran, but is no batch of the task.
      return {
        progress: (stored) => ({
          ...addStep(stored, deleted, deleted > 0),
          batchRows: stored.batchRows + deleted,
          batchMs: stored.batchMs + ms,
        }),
        again: deleted === input.batchSize,
        units: deleted,
        log: { deleted },
      };
    },
    // Only batch deletes are paced: a partition drop costs the same however many rows it held.
    pace: {
      shown: (p) => p.rowsPerSecond,
      show: (p, rowsPerSecond) => ({ ...p, rowsPerSecond }),
    },
    result: truncationResult,
  });
}

/** What the reconciler needs of the kind: a vanished job is queued again from the row's stored request. */
const truncateKind = {
  kind: "truncate",
  input: truncatePayload,
  requeuePayload: (task: TaskRow) => ({ ...(task.request as object), taskId: task.id }),
} as const;

/** A step's deletions added to the stored progress. */
function addStep(stored: TruncateProgress, deleted: number, counted: boolean): TruncateProgress {
  const total = stored.deleted + deleted;
  const toDelete = Math.max(stored.toDelete, total);
  return {
    ...stored,
    deleted: total,
    toDelete,
    batches: stored.batches + (counted ? 1 : 0),
    percent: percentOf(total, toDelete),
  };
}

/**
 * getTaskStatus's result of a completed truncation: the rows, and the bytes the aspect's partitions took on disk before
 * and after (table with TOAST, and indexes). A dropped partition frees its files at once; rows deleted in batches leave
 * dead tuples PostgreSQL reuses after vacuum, freeing disk only when vacuum truncates the file's end. `bytesFreed` is
 * never negative: rows written meanwhile can outgrow what was freed.
 */
export function truncationResult(p: TruncateProgress) {
  const before = p.bytesBefore ?? { tableBytes: 0, indexBytes: 0 };
  const after = p.bytesAfter ?? before;
  const total = (b: typeof before) => b.tableBytes + b.indexBytes;
  return {
    deleted: p.deleted,
    batches: p.batches,
    partitionsDropped: p.partitionsDropped,
    bytesFreed: Math.max(0, total(before) - total(after)),
    tableBytes: { before: before.tableBytes, after: after.tableBytes },
    indexBytes: { before: before.indexBytes, after: after.indexBytes },
  };
}

function percentOf(deleted: number, toDelete: number): number {
  return toDelete === 0 ? 100 : Math.round((10_000 * deleted) / toDelete) / 100;
}

/** The truncate queue's runner: its one task kind. */
export function truncationRunner(deps: TruncateDeps): TaskRunner {
  return new TaskRunner(deps, "truncate", [truncateTask(deps.store)]);
}

/** The truncate queue's job handler (what main.ts and the tests run). */
export function createTruncateHandler(deps: TruncateDeps): JobHandler<"truncate"> {
  return truncationRunner(deps).handler("truncate");
}

/**
 * Ends a task whose job BullMQ failed without running it (createWorker's onGivenUp): it stalled, its worker dying or
 * hanging mid-task, more often than the queue allows. The progress stays as the last step committed it.
 */
export function recordGivenUp(tasks: TaskLifecycle, taskId: string, reason: string): Promise<void> {
  return tasks.giveUp(taskId, reason);
}

/** The reconciler's view of truncations: a waiting task whose job vanished from Redis is queued again from its row. */
export function truncationReconciled(producer: Producer<"truncate">): ReconciledKind {
  return reconciledKind(truncateKind, producer);
}
