import type { Redis } from "ioredis";
import type { Logger } from "@mdp/core";
import { AspectRepository, type Database } from "@mdp/db";
import { sendReply, type JobHandler } from "@mdp/queues";
import { DefinitionCache } from "./definition-cache";
import { createEvaluateHandler } from "./evaluate.processor";
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
  });
}
