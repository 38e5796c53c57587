import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase, TimeseriesStore } from "@mdp/db";
import * as prom from "prom-client";
import { closeRedis, createRedis, createWorker, Producer, runUntilSignalled, WorkerMetrics } from "@mdp/queues";
import { TaskLifecycle, TaskReconciler } from "@mdp/tasks";
import { startRetention } from "./retention.processor";
import { createTruncateHandler, recordGivenUp, truncationReconciled } from "./truncate.processor";

const config = loadConfigOrExit();
const logger = createLogger("truncation-worker", config.LOG_LEVEL);
const db = createDatabase(config.DATABASE_URL, { poolMax: config.TRUNCATION_CONCURRENCY + 2 });
const connection = createRedis(config.REDIS_URL, "worker");
const producerConnection = createRedis(config.REDIS_URL, "worker");
const shutdown = new AbortController();
const tasks = new TaskLifecycle(db, logger);
const leases = tasks.keepLeases();
const handler = createTruncateHandler({
  db,
  tasks,
  store: new TimeseriesStore(db.pool),
  logger,
  shutdownSignal: shutdown.signal,
});
const metrics = new WorkerMetrics(prom, logger);
const worker = createWorker("truncate", handler, {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.TRUNCATION_CONCURRENCY,
  logger,
  observer: metrics,
  leaseMs: tasks.leaseMs,
  onGivenUp: (payload, _job, reason) => recordGivenUp(tasks, payload.taskId, reason),
});
const producer = new Producer("truncate", producerConnection, config.QUEUE_PREFIX);
// Lapsed leases wait again; truncations whose job vanished from Redis are queued again (at start, then every 15 s).
const reconciler = new TaskReconciler(tasks, [truncationReconciled(producer)], logger);
reconciler.start();
// Retention policies' schedules: their jobs become truncation tasks here; the schedulers are reconciled with the rows.
const retention = startRetention({
  db,
  tasks,
  truncations: producer,
  logger,
  urnNamespace: config.URN_NAMESPACE,
  rootUserUrn: config.ROOT_USER_URN,
  connection,
  producerConnection,
  prefix: config.QUEUE_PREFIX,
  observer: metrics,
});
runUntilSignalled({
  worker,
  logger,
  monitor: {
    port: config.TRUNCATION_WORKER_PORT,
    host: config.HOST,
    metrics,
    checks: { postgres: () => db.pool.query("SELECT 1") },
  },
  shutdown,
  resources: [
    () => retention.stop(),
    async () => reconciler.stop(),
    async () => leases.stop(),
    () => producer.close(),
    () => closeRedis(producerConnection),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
});
