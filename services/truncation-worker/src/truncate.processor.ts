import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "@mdp/core";
import {
  deleteBatch,
  cancellationReason,
  dropPartitions,
  PARTITIONS_PER_DROP,
  inTransaction,
  planTruncation,
  type Database,
  type TimeseriesStore,
  type TruncationPlan,
} from "@mdp/db";
import type { JobHandler, Payload } from "@mdp/queues";
import { performance } from "node:perf_hooks";
import type pg from "pg";

export interface TruncateDeps {
  db: Database;
  store: TimeseriesStore;
  logger: Logger;
  /** aborted when the process is asked to stop: the job hands itself back between steps */
  shutdownSignal: AbortSignal;
}

export interface TruncateProgress {
  deleted: number;
  toDelete: number;
  batches: number;
  percent: number;
}

type TaskEnd = "completed" | "failed" | "cancelled";

/**
 * Deletes the rows of one time-series aspect older than the cutoff: partitions that lie entirely before it are dropped
 * whole, the partition it falls inside is deleted from in transactions of at most `batchSize` rows. Every step commits
 * together with the task's progress, so a worker that dies mid-task leaves an exact count, and the next attempt plans
 * again from what is left: it never deletes a row at or after the cutoff, nor counts a row twice.
 */
export function createTruncateHandler(deps: TruncateDeps): JobHandler<"truncate"> {
  return async (payload, job, token) => {
    const { prisma } = deps.db;
    const task = await prisma.task.findUnique({ where: { id: payload.taskId } });
    if (!task) throw new UnrecoverableError(`Task ${payload.taskId} does not exist`);
    if (task.state !== "waiting" && task.state !== "active") return task.result; // a duplicate delivery of a finished task
    let progress = progressOf(task.progress);
    if (task.cancelRequested) {
      const reason = cancellationReason(task);
      await finish(deps.db.pool, payload.taskId, "cancelled", progress, reason);
      throw new UnrecoverableError(reason);
    }
    const ref = { entityType: payload.entityType, aspectName: payload.aspect };
    const startedAt = task.startedAt ?? new Date();
    // Active from before the plan: counting the rows to delete is work too, and may wait on another's lock.
    const { attemptsMade: attempt } = await prisma.task.update({
      where: { id: payload.taskId },
      data: {
        state: "active",
        startedAt,
        // Counted here, not by BullMQ: a job re-queued after its worker died or Redis lost it is an attempt too.
        attemptsMade: { increment: 1 },
        failedReason: null,
      },
    });

    const deadline =
      payload.timeoutSeconds === undefined ? undefined : startedAt.getTime() + payload.timeoutSeconds * 1000;
    const timeOut = async (): Promise<never> => {
      const reason = `Timed out after ${payload.timeoutSeconds} s; ${progress.deleted} rows were deleted before the timeout`;
      await finish(deps.db.pool, payload.taskId, "failed", progress, reason);
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
    const planned = async () => {
      const partitions = await deps.store.partitions(ref);
      return withinDeadline((client) => planTruncation(client, partitions, payload.endTimeMillis));
    };

    const checkpoint = async () => {
      if (deps.shutdownSignal.aborted) await handBack(deps.db.pool, payload.taskId, attempt, job, token);
      if (deadline !== undefined && Date.now() >= deadline) await timeOut();
      const { cancelRequested } = await prisma.task.findUniqueOrThrow({
        where: { id: payload.taskId },
        select: { cancelRequested: true },
      });
      if (cancelRequested) {
        const reason = cancellationReason({ ...task, startedAt, progress: { ...progress } });
        await finish(deps.db.pool, payload.taskId, "cancelled", progress, reason);
        throw new UnrecoverableError(reason);
      }
    };
    const step = async (work: (client: pg.PoolClient) => Promise<number>) => {
      await checkpoint();
      const started = performance.now();
      let deleted = 0;
      // The deadline holds inside a step too: a large batch, or one waiting on a lock, is cancelled by PostgreSQL when
      // the time is up, and rolls back whole, so the progress stays exact.
      progress = await withinDeadline(async (client) =>
        addProgress(client, payload.taskId, (deleted = await work(client))),
      );
      // How long each transaction held its locks: what operators (and bench/truncate) watch.
      deps.logger.debug({ taskId: payload.taskId, deleted, stepMs: performance.now() - started }, "truncation step");
      // The dashboard's copy; the task row is the truth, so a Redis hiccup here must not fail the step.
      await job.updateProgress({ ...progress }).catch(() => undefined);
    };

    try {
      let plan = await planned();
      // The first attempt fixes toDelete; a resumed one keeps it, so the story the task row tells stays whole.
      if (task.startedAt === null) {
        progress = { ...progress, toDelete: plan.toDelete, percent: plan.toDelete === 0 ? 100 : 0 };
        await prisma.task.update({ where: { id: payload.taskId }, data: { progress: { ...progress } } });
      }
      // Rows can arrive for old days while we work: plan again until nothing older than the cutoff is left. Partitions
      // wholly before it go even when they hold no rows (a write that failed after creating them, a day an earlier
      // truncation emptied): they delete nothing, but count against TIMESERIES_MAX_PARTITIONS_PER_ASPECT. A plan
      // again after dropping them finds none (dropped ones leave the bookkeeping in the same transaction).
      while (plan.toDelete > 0 || plan.wholePartitions.length > 0) {
        await executePlan(plan, payload, step);
        plan = await planned();
      }
    } catch (error) {
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await recordAttemptFailure(deps.db.pool, job, payload.taskId, error);
      throw error;
    }
    const result = { deleted: progress.deleted, batches: progress.batches };
    await finish(deps.db.pool, payload.taskId, "completed", progress, null, result);
    return result;
  };
}

async function executePlan(
  plan: TruncationPlan,
  payload: Payload<"truncate">,
  step: (work: (client: pg.PoolClient) => Promise<number>) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < plan.wholePartitions.length; i += PARTITIONS_PER_DROP) {
    const group = plan.wholePartitions.slice(i, i + PARTITIONS_PER_DROP);
    await step((client) => dropPartitions(client, group));
  }
  if (!plan.boundary) return;
  const { partition } = plan.boundary;
  let deleted: number;
  do {
    let n = 0;
    await step(async (client) => (n = await deleteBatch(client, partition, payload.endTimeMillis, payload.batchSize)));
    deleted = n;
  } while (deleted === payload.batchSize);
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

/**
 * Adds a step's deletions to the task row in the step's own transaction. The arithmetic is done by PostgreSQL on the
 * stored value, so even two workers that briefly ran the same task (a job re-queued while its first worker still
 * lived) count every row once.
 */
async function addProgress(client: pg.ClientBase, taskId: string, deleted: number): Promise<TruncateProgress> {
  const { rows } = await client.query<{ progress: TruncateProgress }>(
    `WITH p AS (
       SELECT (progress->>'deleted')::bigint + $2 AS deleted,
              GREATEST((progress->>'toDelete')::bigint, (progress->>'deleted')::bigint + $2) AS to_delete,
              (progress->>'batches')::int + 1 AS batches
         FROM task WHERE id = $1)
     UPDATE task SET progress = jsonb_build_object(
              'deleted', p.deleted, 'toDelete', p.to_delete, 'batches', p.batches,
              'percent', CASE WHEN p.to_delete = 0 THEN 100 ELSE round(100.0 * p.deleted / p.to_delete, 2) END)
       FROM p WHERE id = $1
     RETURNING task.progress`,
    [taskId, deleted],
  );
  return progressOf(rows[0]?.progress);
}

async function finish(
  pool: pg.Pool,
  taskId: string,
  state: TaskEnd,
  progress: TruncateProgress,
  failedReason: string | null,
  result?: Record<string, number>,
): Promise<void> {
  await pool.query(
    `UPDATE task SET state = $2::"TaskState", progress = $3::jsonb, failed_reason = $4, result = $5::jsonb,
            finished_at = now() WHERE id = $1`,
    [taskId, state, JSON.stringify(progress), failedReason, result ? JSON.stringify(result) : null],
  );
}

/**
 * Puts the job back in the queue at once: another worker (or this one, restarted) resumes from the recorded progress.
 * Its task waits again meanwhile, so getTaskStatus does not show it running and cancelTask can take it off the queue.
 */
async function handBack(
  pool: pg.Pool,
  taskId: string,
  attempt: number,
  job: Job,
  token: string | undefined,
): Promise<never> {
  // Only while it is this attempt's: a worker that took the job over after this one's lock lapsed runs a later one.
  await pool.query("UPDATE task SET state = 'waiting' WHERE id = $1 AND state = 'active' AND attempts_made = $2", [
    taskId,
    attempt,
  ]);
  await job.moveToDelayed(Date.now(), token);
  throw new DelayedError();
}

/** A failed attempt is recorded; the task becomes failed only when BullMQ will not retry it. */
async function recordAttemptFailure(pool: pg.Pool, job: Job, taskId: string, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  const attempt = job.attemptsMade + 1;
  const lastAttempt = attempt >= (job.opts.attempts ?? 1);
  await pool
    .query(
      lastAttempt
        ? `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now() WHERE id = $1`
        : `UPDATE task SET state = 'waiting', failed_reason = $2 WHERE id = $1`,
      [taskId, lastAttempt ? message : `Attempt ${attempt} failed, retrying: ${message}`],
    )
    .catch(() => undefined); // PostgreSQL itself may be what failed; BullMQ still records the failure
}

/**
 * Ends a task whose job BullMQ failed without running it (createWorker's onGivenUp): it stalled, its worker dying or
 * hanging mid-task, more often than the queue allows. The progress stays as the last step committed it.
 */
export async function recordGivenUp(pool: pg.Pool, taskId: string, reason: string): Promise<void> {
  await pool.query(
    `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now()
      WHERE id = $1 AND state IN ('waiting', 'active')`,
    [taskId, `Given up after its workers stopped during it too often: ${reason}`],
  );
}

/** PostgreSQL cancelled the statement because statement_timeout passed (57014 is also an operator's cancel). */
function isStatementTimeout(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === "57014" && typeof e.message === "string" && e.message.includes("statement timeout");
}
