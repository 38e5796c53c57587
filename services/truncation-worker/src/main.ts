import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase, TimeseriesStore } from "@mdp/db";
import { closeRedis, createRedis, createWorker, Producer, runUntilSignalled } from "@mdp/queues";
import { OrphanReconciler } from "./orphan-reconciler";
import { createTruncateHandler, recordGivenUp } from "./truncate.processor";

const config = loadConfigOrExit();
const logger = createLogger("truncation-worker", config.LOG_LEVEL);
const db = createDatabase(config.DATABASE_URL, { poolMax: config.TRUNCATION_CONCURRENCY + 2 });
const connection = createRedis(config.REDIS_URL, "worker");
const producerConnection = createRedis(config.REDIS_URL, "worker");
const shutdown = new AbortController();
const handler = createTruncateHandler({
  db,
  store: new TimeseriesStore(db.pool),
  logger,
  shutdownSignal: shutdown.signal,
});
const worker = createWorker("truncate", handler, {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.TRUNCATION_CONCURRENCY,
  logger,
  onGivenUp: (payload, _job, reason) => recordGivenUp(db.pool, payload.taskId, reason),
});
const producer = new Producer("truncate", producerConnection, config.QUEUE_PREFIX);
const reconciler = new OrphanReconciler(db, producer, logger);
reconciler.start();
runUntilSignalled({
  worker,
  logger,
  heartbeatFile: config.WORKER_HEARTBEAT_FILE,
  shutdown,
  resources: [
    async () => reconciler.stop(),
    () => producer.close(),
    () => closeRedis(producerConnection),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
});
