import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createPrismaClient } from "@mdp/db";
import { closeRedis, createRedis, createWorker, runUntilSignalled } from "@mdp/queues";
import { createTruncateHandler } from "./truncate.processor";

const config = loadConfigOrExit();
const logger = createLogger("truncation-worker", config.LOG_LEVEL);
const prisma = createPrismaClient(config.DATABASE_URL);
const connection = createRedis(config.REDIS_URL, "worker");
const shutdown = new AbortController();
const worker = createWorker("truncate", createTruncateHandler({ prisma, logger, shutdownSignal: shutdown.signal }), {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.TRUNCATION_CONCURRENCY,
  logger,
});
runUntilSignalled({
  worker,
  logger,
  resources: [() => closeRedis(connection), () => prisma.$disconnect(), stopTelemetry],
  shutdown,
});
