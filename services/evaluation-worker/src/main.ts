import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createPrismaClient } from "@mdp/db";
import { closeRedis, createRedis, createWorker, runUntilSignalled } from "@mdp/queues";
import { createEvaluateHandler } from "./evaluate.processor";

const config = loadConfigOrExit();
const logger = createLogger("evaluation-worker", config.LOG_LEVEL);
const prisma = createPrismaClient(config.DATABASE_URL);
const connection = createRedis(config.REDIS_URL, "worker");
const worker = createWorker("evaluate", createEvaluateHandler({ prisma }), {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.EVALUATION_CONCURRENCY,
  logger,
});
runUntilSignalled({
  worker,
  logger,
  resources: [() => closeRedis(connection), () => prisma.$disconnect(), stopTelemetry],
});
