import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "@mdp/core";
import {
  deleteBatch,
  dropPartitions,
  PARTITIONS_PER_DROP,
  inTransaction,
  planTruncation,
  type Database,
  type TimeseriesStore,
  type TruncationPlan,
} from "@mdp/db";
import { JobCancelledError, truncatePayload, type JobHandler, type Payload, type Producer } from "@mdp/queues";
import { cancellationReason, isLastAttempt, type ReconciledKind, type TaskLifecycle } from "@mdp/tasks";
import { performance } from "node:perf_hooks";
import type pg from "pg";

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

/** Batches can take milliseconds: the job's progress (one Redis round trip) is reported at most this often. */
export const PROGRESS_INTERVAL_MS = 1000;

export interface TruncateProgress {
  deleted: number;
  toDelete: number;
  batches: number;
  percent: number;
}

/** What one step did: rows deleted, and whether it counts as a batch (it deleted rows or dropped partitions). */
interface StepOutcome {
  deleted: number;
  counted: boolean;
}

/**
 * Deletes the rows of one time-series aspect older than the cutoff: partitions that lie entirely before it are dropped
 * whole, the partition it falls inside is deleted from in transactions of at most `batchSize` rows. Every step commits
 * together with the task's progress under the attempt's lease (a stale attempt's step rolls back whole), so a worker
 * that dies mid-task leaves an exact count, and the next attempt plans again from what is left: it never deletes a
 * row at or after the cutoff, nor counts a row twice. After every plan `toDelete` is what this task deleted plus what
 * is left, so percent is right after a resume, and a task that overlapped another on the same aspect ends with what
 * it deleted itself (the other's deletions are neither counted nor left "to go").
 */
export function createTruncateHandler(deps: TruncateDeps): JobHandler<"truncate"> {
  const { tasks } = deps;
  return async (payload, job, token) => {
    const claim = await tasks.claimJob(payload.taskId, job, token);
    if (claim.outcome === "finished") return claim.result; // a duplicate delivery
    const { lease, task } = claim;
    let progress = progressOf(task.progress);
    const ref = { entityType: payload.entityType, aspectName: payload.aspect };
    const startedAt = task.startedAt ?? new Date();

    const deadline =
      payload.timeoutSeconds === undefined ? undefined : startedAt.getTime() + payload.timeoutSeconds * 1000;
    const timeOut = async (): Promise<never> => {
      const reason = `Timed out after ${payload.timeoutSeconds} s; ${progress.deleted} rows were deleted before the timeout`;
      await tasks.fail(lease, reason, progress);
      throw new UnrecoverableError(reason);
    };
    /** In a transaction whose statements PostgreSQL cancels when the deadline passes, which then ends the task. */
    const withinDeadline = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
      try {
        return await inTransaction(deps.db.pool, async (client) => {
          if (deadline !== undefined) {
            const remainingMs = Math.max(1, deadline - Date.now());
            await client.query("SELECT set_config('statement_timeout', $1, true)", [`${remainingMs}ms`]);
          }
          return work(client);
        });
      } catch (error) {
        if (deadline !== undefined && isStatementTimeout(error)) await timeOut();
        throw error;
      }
    };
    /** Plans what is left, and records toDelete as what this task deleted plus that. */
    const planned = async () => {
      const partitions = await deps.store.partitions(ref);
      return withinDeadline(async (client) => {
        const plan = await planTruncation(client, partitions, payload.endTimeMillis);
        progress = await tasks.progress(lease, (stored) => withToDelete(progressOf(stored), plan.toDelete), client);
        return plan;
      });
    };

    const dashboard = dashboardProgress(job, deps.progressIntervalMs ?? PROGRESS_INTERVAL_MS);

    const checkpoint = async () => {
      if (deps.shutdownSignal.aborted) await tasks.handBack(lease, job, token);
      if (deadline !== undefined && Date.now() >= deadline) await timeOut();
      const { cancelRequested } = await tasks.checkpoint(lease);
      if (cancelRequested) {
        const reason = cancellationReason({ ...task, startedAt, progress: { ...progress } });
        await tasks.cancel(lease, reason, progress);
        throw new JobCancelledError(reason);
      }
    };
    const step = async (work: (client: pg.PoolClient) => Promise<StepOutcome>) => {
      await checkpoint();
      const started = performance.now();
      let deleted = 0;
      // The deadline holds inside a step too: a large batch, or one waiting on a lock, is cancelled by PostgreSQL when
      // the time is up, and rolls back whole, so the progress stays exact.
      progress = await withinDeadline(async (client) => {
        const outcome = await work(client);
        deleted = outcome.deleted;
        return tasks.progress(lease, (stored) => addStep(progressOf(stored), outcome), client);
      });
      // How long each transaction held its locks: what operators (and bench/truncate) watch.
      deps.logger.debug({ taskId: payload.taskId, deleted, stepMs: performance.now() - started }, "truncation step");
      await dashboard.report(progress);
    };

    try {
      let plan = await planned();
      // Rows can arrive for old days while we work: plan again until nothing older than the cutoff is left. Partitions
      // wholly before it go even when they hold no rows (a write that failed after creating them, a day an earlier
      // truncation emptied): they delete nothing, but count against TIMESERIES_MAX_PARTITIONS_PER_ASPECT. A plan
      // again after dropping them finds none (dropped ones leave the bookkeeping in the same transaction).
      while (plan.toDelete > 0 || plan.wholePartitions.length > 0) {
        await executePlan(plan, payload, step);
        plan = await planned();
      }
      const result = { deleted: progress.deleted, batches: progress.batches };
      await tasks.complete(lease, progress, result);
      await dashboard.report(progress, true);
      return result;
    } catch (error) {
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await tasks.failAttempt(lease, error, isLastAttempt(job));
      throw error;
    } finally {
      tasks.release(lease); // however the attempt ended, this process renews its lease no more
    }
  };
}

async function executePlan(
  plan: TruncationPlan,
  payload: Payload<"truncate">,
  step: (work: (client: pg.PoolClient) => Promise<StepOutcome>) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < plan.wholePartitions.length; i += PARTITIONS_PER_DROP) {
    const group = plan.wholePartitions.slice(i, i + PARTITIONS_PER_DROP);
    await step(async (client) => ({ deleted: await dropPartitions(client, group), counted: true }));
  }
  if (!plan.boundary) return;
  const { partition } = plan.boundary;
  let deleted: number;
  do {
    let n = 0;
    // The batch after one that deleted exactly batchSize rows may find none: it ran, but is no batch of the task.
    await step(async (client) => {
      n = await deleteBatch(client, partition, payload.endTimeMillis, payload.batchSize);
      return { deleted: n, counted: n > 0 };
    });
    deleted = n;
  } while (deleted === payload.batchSize);
}

/**
 * The job's copy of the progress, which Bull Board draws as a bar: it reads a number, or an object's `progress`
 * number (0–100), so the percent goes there and the counts beside it. Throttled to one report per `intervalMs` (the
 * first step and the end always report); the task row stays the truth, so a Redis hiccup here never fails a step.
 */
function dashboardProgress(job: Job, intervalMs: number) {
  let last = Number.NEGATIVE_INFINITY;
  return {
    async report(progress: TruncateProgress, final = false): Promise<void> {
      const now = performance.now();
      if (!final && now - last < intervalMs) return;
      last = now;
      await job.updateProgress({ progress: progress.percent, ...progress }).catch(() => undefined);
    },
  };
}

function progressOf(value: unknown): TruncateProgress {
  const p = (value ?? {}) as Partial<TruncateProgress>;
  return {
    deleted: Number(p.deleted ?? 0),
    toDelete: Number(p.toDelete ?? 0),
    batches: Number(p.batches ?? 0),
    percent: Number(p.percent ?? 0),
  };
}

/** A step's deletions added to the stored progress (read under the row's lock, so two attempts never lose a count). */
function addStep(stored: TruncateProgress, step: StepOutcome): TruncateProgress {
  const deleted = stored.deleted + step.deleted;
  const toDelete = Math.max(stored.toDelete, deleted);
  return { deleted, toDelete, batches: stored.batches + (step.counted ? 1 : 0), percent: percentOf(deleted, toDelete) };
}

/** After a plan: what this task deleted, plus what is left to delete now. */
function withToDelete(stored: TruncateProgress, left: number): TruncateProgress {
  const toDelete = stored.deleted + left;
  return { ...stored, toDelete, percent: percentOf(stored.deleted, toDelete) };
}

function percentOf(deleted: number, toDelete: number): number {
  return toDelete === 0 ? 100 : Math.round((10_000 * deleted) / toDelete) / 100;
}

/**
 * Ends a task whose job BullMQ failed without running it (createWorker's onGivenUp): it stalled, its worker dying or
 * hanging mid-task, more often than the queue allows. The progress stays as the last step committed it.
 */
export function recordGivenUp(tasks: TaskLifecycle, taskId: string, reason: string): Promise<void> {
  return tasks.giveUp(taskId, reason);
}

/**
 * The reconciler's view of truncations: a waiting task whose job vanished from Redis (a restart without persistence)
 * is queued again under its own id, from its stored request.
 */
export function truncationReconciled(producer: Producer<"truncate">): ReconciledKind {
  return {
    type: "TRUNCATE_TIMESERIES",
    jobExists: async (taskId) => Boolean(await producer.queue.getJob(taskId)),
    failedReason: (taskId) => producer.failedReason(taskId),
    requeue: async (task) => {
      const payload = truncatePayload.safeParse({ ...(task.request as object), taskId: task.id });
      if (!payload.success) return; // not a request this version can run; left for an operator to see
      await producer.enqueue(task.id, payload.data);
    },
  };
}

/** PostgreSQL cancelled the statement because statement_timeout passed (57014 is also an operator's cancel). */
function isStatementTimeout(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === "57014" && typeof e.message === "string" && e.message.includes("statement timeout");
}
