import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import { closeRedis, createRedis, createWorker, runUntilSignalled } from "@mdp/queues";
import { evaluationGivenUp, evaluationHandler } from "./evaluation-handler";
import { TaskRetention } from "./task-retention";

const config = loadConfigOrExit();
const logger = createLogger("evaluation-worker", config.LOG_LEVEL);
// A job uses one connection at a time; one more for pruning, one spare.
const db = createDatabase(config.DATABASE_URL, { poolMax: config.EVALUATION_CONCURRENCY + 2 });
const connection = createRedis(config.REDIS_URL, "worker");
const shutdown = new AbortController();
// Every job the worker runs at once may have one task waiting for a thread, no more (see EvaluationPool).
const handler = evaluationHandler(db, connection, logger, shutdown.signal, config.EVALUATION_TIME_LIMIT_MS, {
  threads: config.EVALUATION_THREADS,
  memoryLimitMb: config.EVALUATION_MEMORY_LIMIT_MB,
  maxQueue: config.EVALUATION_CONCURRENCY,
});
const worker = createWorker("evaluate", handler, {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.EVALUATION_CONCURRENCY,
  logger,
  onGivenUp: evaluationGivenUp(db, connection, logger),
});
const retention = new TaskRetention(db.pool, logger);
retention.start();
runUntilSignalled({
  worker,
  logger,
  heartbeatFile: config.WORKER_HEARTBEAT_FILE,
  resources: [
    async () => retention.stop(),
    () => handler.close(),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
  shutdown,
});
