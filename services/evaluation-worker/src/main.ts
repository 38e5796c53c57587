import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import * as prom from "prom-client";
import { closeRedis, createRedis, createWorker, Producer, runUntilSignalled, WorkerMetrics } from "@mdp/queues";
import { EvaluationTasks, TaskLifecycle, TaskReconciler } from "@mdp/tasks";
import { evaluationGivenUp, evaluationHandler, evaluationsReconciled } from "./evaluation-handler";
import { evaluationRegistry } from "./evaluation-metrics";
import { TaskRetention } from "./task-retention";

const config = loadConfigOrExit();
const logger = createLogger("evaluation-worker", config.LOG_LEVEL);
// A job uses one connection at a time; one more for pruning, one spare.
const db = createDatabase(config.DATABASE_URL, { poolMax: config.EVALUATION_CONCURRENCY + 2 });
const connection = createRedis(config.REDIS_URL, "worker");
const shutdown = new AbortController();
const tasks = new TaskLifecycle(db, logger);
const leases = tasks.keepLeases();
// Every job the worker runs at once may have one task waiting for a thread, no more (see EvaluationPool).
const handler = evaluationHandler(
  db,
  connection,
  logger,
  shutdown.signal,
  config.EVALUATION_TIME_LIMIT_MS,
  {
    threads: config.EVALUATION_THREADS,
    memoryLimitMb: config.EVALUATION_MEMORY_LIMIT_MB,
    maxQueue: config.EVALUATION_CONCURRENCY,
  },
  tasks,
);
const metrics = new WorkerMetrics(prom, logger);
const worker = createWorker("evaluate", handler, {
  connection,
  prefix: config.QUEUE_PREFIX,
  concurrency: config.EVALUATION_CONCURRENCY,
  logger,
  observer: metrics,
  onGivenUp: evaluationGivenUp(db, connection, logger, tasks),
});
const retention = new TaskRetention(new EvaluationTasks(db.pool, tasks), logger);
retention.start();
// Lapsed leases wait again; test runs whose job vanished from Redis are queued again (at start, then every 15 s).
const producerConnection = createRedis(config.REDIS_URL, "worker");
const producer = new Producer("evaluate", producerConnection, config.QUEUE_PREFIX);
const reconciler = new TaskReconciler(tasks, evaluationsReconciled(producer), logger);
reconciler.start();
runUntilSignalled({
  worker,
  logger,
  monitor: {
    port: config.EVALUATION_WORKER_PORT,
    host: config.HOST,
    metrics,
    registries: [evaluationRegistry],
    checks: { postgres: () => db.pool.query("SELECT 1") },
  },
  resources: [
    async () => retention.stop(),
    async () => reconciler.stop(),
    async () => leases.stop(),
    () => producer.close(),
    () => closeRedis(producerConnection),
    () => handler.close(),
    () => closeRedis(connection),
    () => db.close(),
    stopTelemetry,
  ],
  shutdown,
});
