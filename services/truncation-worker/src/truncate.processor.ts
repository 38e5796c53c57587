import { z } from "zod";
import {
  deleteBatch,
  dropPartitions,
  PARTITIONS_PER_DROP,
  planTruncation,
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
const truncateProgress = z.object({ deleted: count, toDelete: count, batches: count, percent: z.number().default(0) });
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
    async plan({ input }, client) {
      const partitions = await store.partitions({ entityType: input.entityType, aspectName: input.aspect });
      const plan = await planTruncation(client, partitions, input.endTimeMillis);
      const steps: TruncateStep[] = [];
      for (let i = 0; i < plan.wholePartitions.length; i += PARTITIONS_PER_DROP) {
        steps.push({ drop: plan.wholePartitions.slice(i, i + PARTITIONS_PER_DROP) });
      }
      if (plan.boundary) steps.push({ deleteFrom: plan.boundary.partition });
      const nothingLeft = plan.toDelete === 0 && plan.wholePartitions.length === 0;
      return {
        steps: nothingLeft ? [] : steps,
        progress: (stored) => {
          const toDelete = stored.deleted + plan.toDelete;
          return { ...stored, toDelete, percent: percentOf(stored.deleted, toDelete) };
        },
      };
    },
    async step({ input }, step: TruncateStep, client) {
      if ("drop" in step) {
        const deleted = await dropPartitions(client, step.drop);
        return { progress: (stored) => addStep(stored, deleted, true), log: { deleted } };
      }
      const deleted = await deleteBatch(client, step.deleteFrom, input.endTimeMillis, input.batchSize);
      // The batch after one that deleted exactly batchSize rows may find none: it ran, but is no batch of the task.
      return {
        progress: (stored) => addStep(stored, deleted, deleted > 0),
        again: deleted === input.batchSize,
        log: { deleted },
      };
    },
    result: (p) => ({ deleted: p.deleted, batches: p.batches }),
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
  return { deleted: total, toDelete, batches: stored.batches + (counted ? 1 : 0), percent: percentOf(total, toDelete) };
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
