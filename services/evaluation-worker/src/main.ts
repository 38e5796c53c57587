import { stopTelemetry } from "./instrument";
import { createLogger, loadConfigOrExit } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import * as prom from "prom-client";
import {
  closeRedis,
  createRedis,
  createWorker,
  Producer,
  RateLimits,
  runUntilSignalled,
  WorkerMetrics,
} from "@mdp/queues";
import { EvaluationTasks, TaskLifecycle, TaskReconciler } from "@mdp/tasks";
import { evaluationGivenUp, evaluationHandler, evaluationsReconciled } from "./evaluation-handler";
import { evaluationRegistry } from "./evaluation-metrics";
import { TaskRetention } from "./task-retention";
import { TestHistoryRetention } from "./test-result-history";
import { startTestSchedules } from "./test-schedules.processor";

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
    historyMaxTransitions: config.TEST_HISTORY_MAX_TRANSITIONS,
    rootUserUrn: config.ROOT_USER_URN,
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
  leaseMs: tasks.leaseMs,
  onGivenUp: evaluationGivenUp(db, connection, logger, tasks),
});
const retention = new TaskRetention(new EvaluationTasks(db.pool, tasks), logger);
retention.start();
// Test result transitions older than TEST_HISTORY_RETENTION_DAYS (each live pair's latest kept), every 10 minutes.
const historyRetention = new TestHistoryRetention(db.pool, config.TEST_HISTORY_RETENTION_DAYS, logger);
historyRetention.start();
// Lapsed leases wait again; test runs whose job vanished from Redis are queued again (at start, then every 15 s).
const producerConnection = createRedis(config.REDIS_URL, "worker");
const producer = new Producer("evaluate", producerConnection, config.QUEUE_PREFIX);
const reconciler = new TaskReconciler(tasks, evaluationsReconciled(producer), logger);
reconciler.start();
// Scheduled tests: their schedules' jobs become runTest tasks here; the schedulers are reconciled with the rows. Each
// firing counts against its owner's runTest limit, on the gateway's keys.
const rateLimits = new RateLimits(RateLimits.connect(config, logger), config);
const testSchedules = startTestSchedules({
  db,
  tasks,
  runs: producer,
  rootUserUrn: config.ROOT_USER_URN,
  rateLimits,
  logger,
  connection,
  producerConnection,
  prefix: config.QUEUE_PREFIX,
  observer: metrics,
});
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
    () => testSchedules.stop(),
    () => rateLimits.close(),
    async () => retention.stop(),
    async () => historyRetention.stop(),
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
