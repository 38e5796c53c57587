import type { Redis } from "ioredis";
import type { Logger } from "@mdp/core";
import { AspectRepository, type Database } from "@mdp/db";
import type { Job } from "bullmq";
import { EVALUATE_MAX_ITEMS, sendReply, type JobHandler, type Payload } from "@mdp/queues";
import { createEvaluateHandler, recordEvaluateFailure } from "./evaluate.processor";
import { EvaluationStore } from "./evaluation.store";
import { EvaluationPool, type PoolSettings } from "./evaluation-pool";
import { ResultsPusher } from "./results.pusher";
import { TaskRows } from "./task-rows";

/** The evaluate-tests handler, and how to stop the threads it evaluates in (after the BullMQ worker has closed). */
export type EvaluationHandler = JobHandler<"evaluate"> & { close(): Promise<void> };

/**
 * The evaluate-tests handler wired to its collaborators on one database, replying to waiting gateways on `redis` (a
 * command connection, such as the worker's own): what main.ts and the tests both run. It starts the evaluation
 * threads at once (see EvaluationPool); `close()` destroys them.
 */
export function evaluationHandler(
  db: Database,
  redis: Redis,
  logger: Logger,
  shutdownSignal: AbortSignal,
  /** EVALUATION_TIME_LIMIT_MS */
  timeLimitMs = 10_000,
  /**
   * EVALUATION_THREADS, EVALUATION_MEMORY_LIMIT_MB and the jobs run at once (EVALUATION_CONCURRENCY), each of whose
   * requests is a task of its own in the pool
   */
  { threads = 2, memoryLimitMb = 128, maxQueue = 8 }: Partial<Omit<PoolSettings, "timeLimitMs">> = {},
): EvaluationHandler {
  const pool = new EvaluationPool({ threads, memoryLimitMb, maxQueue: maxQueue * EVALUATE_MAX_ITEMS, timeLimitMs });
  const handler = createEvaluateHandler({
    db,
    store: new EvaluationStore(db.pool),
    pool,
    pusher: new ResultsPusher(new AspectRepository()),
    tasks: new TaskRows(db.pool),
    reply: (channel, reply) => sendReply(redis, channel, reply),
    logger,
    shutdownSignal,
  });
  return Object.assign(handler, { close: () => pool.close() });
}

/**
 * What becomes of a job BullMQ failed without running it (createWorker's onGivenUp): a test run's row, or the rows of
 * an evaluate job's requests, end as failed with BullMQ's reason, and a waiting gateway is told at once.
 */
export function evaluationGivenUp(
  db: Database,
  redis: Redis,
  logger: Logger,
): (payload: Payload<"evaluate">, job: Job, reason: string) => Promise<void> {
  const tasks = new TaskRows(db.pool);
  const reply = (channel: string, message: Parameters<typeof sendReply>[2]) => sendReply(redis, channel, message);
  return async (payload, job, reason) => {
    const failedReason = `Given up after its workers stopped during it too often: ${reason}`;
    if (payload.kind === "runTest") {
      await tasks.giveUp(payload.taskId, failedReason);
    } else {
      await recordEvaluateFailure({ tasks, reply, logger }, payload, job, new Date(), { failedReason, final: true });
    }
  };
}
