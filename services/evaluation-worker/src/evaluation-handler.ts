import type { Redis } from "ioredis";
import type { Logger } from "@mdp/core";
import { AspectRepository, type Database } from "@mdp/db";
import type { Job } from "bullmq";
import { sendReply, type JobHandler, type Payload } from "@mdp/queues";
import { DefinitionCache } from "./definition-cache";
import { createEvaluateHandler, recordEvaluateFailure } from "./evaluate.processor";
import { EvaluationStore } from "./evaluation.store";
import { ResultsPusher } from "./results.pusher";
import { TaskRows } from "./task-rows";

/**
 * The evaluate-tests handler wired to its collaborators on one database, replying to waiting gateways on `redis` (a
 * command connection, such as the worker's own): what main.ts and the tests both run.
 */
export function evaluationHandler(
  db: Database,
  redis: Redis,
  logger: Logger,
  shutdownSignal: AbortSignal,
  /** EVALUATION_TIME_LIMIT_MS */
  timeLimitMs = 10_000,
): JobHandler<"evaluate"> {
  return createEvaluateHandler({
    db,
    store: new EvaluationStore(db.pool),
    definitions: new DefinitionCache(),
    pusher: new ResultsPusher(new AspectRepository()),
    tasks: new TaskRows(db.pool),
    reply: (channel, reply) => sendReply(redis, channel, reply),
    logger,
    shutdownSignal,
    timeLimitMs,
  });
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
