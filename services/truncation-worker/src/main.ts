import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase, TimeseriesStore } from "@mdp/db";
import { closeRedis, createRedis, createWorker, runUntilSignalled } from "@mdp/queues";
import { createTruncateHandler } from "./truncate.processor";

const config = loadConfigOrExit();
const logger = createLogger("truncation-worker", config.LOG_LEVEL);
const db = createDatabase(config.DATABASE_URL, { poolMax: config.TRUNCATION_CONCURRENCY + 2 });
const connection = createRedis(config.REDIS_URL, "worker");
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
});
runUntilSignalled({
  worker,
  logger,
  resources: [() => closeRedis(connection), () => db.close(), stopTelemetry],
  shutdown,
});
