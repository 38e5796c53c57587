import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit, logDestination } from "@mdp/core";
import { createDatabase, pingDatabase } from "@mdp/db";
import * as prom from "prom-client";
import { closeRedis, createRedis, runUntilSignalled, startChores, WorkerMetrics } from "@mdp/queues";
import { setUpWebhooks } from "./start";
import { registerWebhookGauges, webhookRegistry } from "./webhook-metrics";

const config = loadConfigOrExit();
const logger = createLogger("webhook-worker", config.LOG_LEVEL, logDestination(config));
// The fan-out's pass, the dispatcher's claims and the outcomes it records each take a connection for a statement or a
// short transaction (none is held across a POST), the chores one more: six leave room for all at once.
const db = createDatabase(config.DATABASE_URL, { poolMax: 6 });
// Redis carries only the chores' firings (deliveries wait in PostgreSQL).
const connection = createRedis(config.REDIS_URL, "worker");
const producerConnection = createRedis(config.REDIS_URL, "worker");
const webhooks = setUpWebhooks(db, config, logger);
registerWebhookGauges(db);
const metrics = new WorkerMetrics(prom, logger);
// The cluster's delivery chores: each firing of their job schedulers runs on one webhook worker.
const chores = startChores("webhookChores", webhooks.chores, {
  connection,
  producerConnection,
  prefix: config.QUEUE_PREFIX,
  logger,
  observer: metrics,
});
webhooks.start();
runUntilSignalled({
  worker: chores.worker,
  running: true,
  logger,
  monitor: {
    port: config.WEBHOOK_WORKER_PORT,
    host: config.HOST,
    metrics,
    registries: [webhookRegistry],
    checks: { postgres: () => pingDatabase(db.prisma) },
  },
  resources: [
    () => webhooks.stop(),
    () => chores.stop(),
    () => closeRedis(producerConnection),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
});
