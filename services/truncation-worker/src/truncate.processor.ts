import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "@mdp/core";
import type { PrismaClient } from "@mdp/db";
import type { JobHandler, Payload } from "@mdp/queues";

export interface TruncateDeps {
  prisma: PrismaClient;
  logger: Logger;
  /** aborted when the process is asked to stop: the job hands itself back between batches */
  shutdownSignal: AbortSignal;
}

export interface TruncateProgress {
  deleted: number;
  toDelete: number;
  batches: number;
  percent: number;
}

/**
 * Deletes the rows of one time-series aspect older than the cutoff, in transactions of at most `batchSize` rows.
 * Each batch and the task's progress commit together, so a worker that dies mid-task leaves an exact count and the
 * next attempt resumes from it; the cutoff predicate is re-applied on every batch, so no attempt touches a newer row.
 */
export function createTruncateHandler(deps: TruncateDeps): JobHandler<"truncate"> {
  return async (payload, job, token) => {
    const { prisma } = deps;
    const task = await prisma.task.findUnique({ where: { id: payload.taskId } });
    if (!task) throw new UnrecoverableError(`Task ${payload.taskId} does not exist`);
    if (task.cancelRequested)
      return finish(prisma, payload.taskId, "cancelled", progressOf(task.progress), "Cancelled before it started");

    const startedAt = task.startedAt ?? new Date();
    let progress = progressOf(task.progress);
    if (task.startedAt === null) progress = { ...progress, toDelete: await countOlderRows(prisma, payload) };
    await prisma.task.update({
      where: { id: payload.taskId },
      data: { state: "active", startedAt, attemptsMade: job.attemptsMade + 1, progress: { ...progress } },
    });

    try {
      for (;;) {
        if (deps.shutdownSignal.aborted) return await handBack(job, token);
        if (payload.timeoutSeconds !== undefined && Date.now() - startedAt.getTime() >= payload.timeoutSeconds * 1000) {
          const reason = `Timed out after ${payload.timeoutSeconds} s; ${progress.deleted} rows were deleted before the timeout`;
          await finish(prisma, payload.taskId, "failed", progress, reason);
          throw new UnrecoverableError(reason);
        }
        const current = await prisma.task.findUniqueOrThrow({
          where: { id: payload.taskId },
          select: { cancelRequested: true },
        });
        if (current.cancelRequested) {
          const reason = `Cancelled; ${progress.deleted} rows were deleted before the cancellation`;
          await finish(prisma, payload.taskId, "cancelled", progress, reason);
          throw new UnrecoverableError(reason);
        }
        const deleted = await deleteBatch(prisma, payload, progress);
        progress = nextProgress(progress, deleted);
        await job.updateProgress({ ...progress });
        if (deleted < payload.batchSize) break;
      }
    } catch (error) {
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await recordAttemptFailure(prisma, job, payload.taskId, error);
      throw error;
    }
    const result = { deleted: progress.deleted, batches: progress.batches };
    await finish(prisma, payload.taskId, "completed", progress, null, result);
    return result;
  };
}

async function countOlderRows(prisma: PrismaClient, p: Payload<"truncate">): Promise<number> {
  const [row] = await prisma.$queryRaw<Array<{ n: bigint }>>`
    SELECT count(*) AS n FROM timeseries_aspect
    WHERE entity_type = ${p.entityType} AND aspect_name = ${p.aspect} AND timestamp_millis < ${BigInt(p.endTimeMillis)}`;
  return Number(row?.n ?? 0);
}

/** One batch: delete at most batchSize rows and record the new progress, in one transaction. */
async function deleteBatch(prisma: PrismaClient, p: Payload<"truncate">, progress: TruncateProgress): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const deleted = await tx.$executeRaw`
      DELETE FROM timeseries_aspect
      WHERE (entity_type, aspect_name, timestamp_millis, id) IN (
        SELECT entity_type, aspect_name, timestamp_millis, id FROM timeseries_aspect
        WHERE entity_type = ${p.entityType} AND aspect_name = ${p.aspect} AND timestamp_millis < ${BigInt(p.endTimeMillis)}
        ORDER BY timestamp_millis
        LIMIT ${p.batchSize})`;
    await tx.task.update({ where: { id: p.taskId }, data: { progress: { ...nextProgress(progress, deleted) } } });
    return deleted;
  });
}

function nextProgress(progress: TruncateProgress, deleted: number): TruncateProgress {
  const total = progress.deleted + deleted;
  // Rows may arrive after the count, so toDelete grows rather than percent passing 100.
  const toDelete = Math.max(progress.toDelete, total);
  return {
    deleted: total,
    toDelete,
    batches: progress.batches + 1,
    percent: toDelete === 0 ? 100 : round2((100 * total) / toDelete),
  };
}

function progressOf(value: unknown): TruncateProgress {
  const p = (value ?? {}) as Partial<TruncateProgress>;
  return { deleted: p.deleted ?? 0, toDelete: p.toDelete ?? 0, batches: p.batches ?? 0, percent: p.percent ?? 0 };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

async function finish(
  prisma: PrismaClient,
  taskId: string,
  state: "completed" | "failed" | "cancelled",
  progress: TruncateProgress,
  failedReason: string | null,
  result?: Record<string, number>,
) {
  await prisma.task.update({
    where: { id: taskId },
    data: { state, progress: { ...progress }, failedReason, finishedAt: new Date(), ...(result ? { result } : {}) },
  });
  return result ?? null;
}

/** Puts the job back in the queue at once: another worker (or this one, restarted) resumes from the recorded progress. */
async function handBack(job: Job, token: string | undefined): Promise<never> {
  await job.moveToDelayed(Date.now(), token);
  throw new DelayedError();
}

/** A failed attempt is recorded; the task becomes failed only when BullMQ will not retry it. */
async function recordAttemptFailure(prisma: PrismaClient, job: Job, taskId: string, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  await prisma.task
    .update({
      where: { id: taskId },
      data: lastAttempt
        ? { state: "failed", failedReason: message, finishedAt: new Date() }
        : { state: "waiting", failedReason: `Attempt ${job.attemptsMade + 1} failed, retrying: ${message}` },
    })
    .catch(() => undefined); // PostgreSQL itself may be what failed; BullMQ still records the failure
}
