import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit, logDestination } from "@mdp/core";
import { createDatabase, pingDatabase, TimeseriesStore } from "@mdp/db";
import * as prom from "prom-client";
import {
  closeRedis,
  createRedis,
  createWorker,
  Producer,
  runUntilSignalled,
  startChores,
  WorkerMetrics,
} from "@mdp/queues";
import { retentionPolicyKind, startSchedules } from "@mdp/schedules";
import { RECONCILE_INTERVAL_MS, TaskLifecycle, TaskReconciler } from "@mdp/tasks";
import { createTruncateHandler, recordGivenUp, truncationReconciled } from "./truncate.processor";

const config = loadConfigOrExit();
const logger = createLogger("truncation-worker", config.LOG_LEVEL, logDestination(config));
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
// Lapsed leases wait again; truncations whose job vanished from Redis are queued again: once at this process's start,
// then at each firing of the `reconcile-tasks` chore, on one truncation worker of the cluster.
const reconciler = new TaskReconciler(tasks, [truncationReconciled(producer)], logger);
void reconciler.reconcileCounted().catch((error: unknown) => logger.warn({ err: error }, "reconcile at start failed"));
const chores = startChores(
  "truncationChores",
  [{ name: "reconcile-tasks", everyMs: RECONCILE_INTERVAL_MS, run: () => reconciler.reconcileCounted() }],
  { connection, producerConnection, prefix: config.QUEUE_PREFIX, logger, observer: metrics },
);
// Retention policies: their firings become truncation tasks here; this process also takes its share of the schedule
// sync (the one writer of the schedulers).
const schedules = startSchedules({
  kinds: [retentionPolicyKind],
  db,
  tasks,
  producers: { truncate: producer },
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
    checks: { postgres: () => pingDatabase(db.prisma) },
  },
  shutdown,
  resources: [
    () => schedules.stop(),
    () => chores.stop(),
    async () => leases.stop(),
    () => producer.close(),
    () => closeRedis(producerConnection),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
});
