import { stopTelemetry } from "./instrument";
import { createLogger, EntityRegistry, loadConfigOrExit, logDestination, setHeapGrowingPercent } from "@mdp/core";
import { createDatabase, pingDatabase, replicaMetrics, replicaReadiness } from "@mdp/db";
import * as prom from "prom-client";
import {
  closeRedis,
  createRedis,
  createShardWorkers,
  Producer,
  RateLimits,
  runUntilSignalled,
  startChores,
  WorkerMetrics,
} from "@mdp/queues";
import { scheduledTestKind, startSchedules } from "@mdp/schedules";
import { RECONCILE_INTERVAL_MS, TaskLifecycle, TaskReconciler } from "@mdp/tasks";
import { evaluationGivenUp, evaluationHandler, evaluationsReconciled, jobStartLogLevel } from "./evaluation-handler";
import { evaluationRegistry } from "./evaluation-metrics";
import { TASK_PRUNE_EVERY_MS, TaskRetention } from "./task-retention";
import { HISTORY_PRUNE_EVERY_MS, TestHistoryRetention } from "./test-result-history";
import { tableRetentionChores } from "./table-retention";
import { OnChangeEvaluator } from "./on-change.consumer";
import { onChangeLoop } from "./on-change-loop";
import { onChangeRunStarter } from "./on-change-run-starter";
import { EVENT_PRUNE_EVERY_MS, prunePlatformEventsFully } from "./platform-event-prune";

/**
 * Full collections when the heap has grown by what survived the last one. V8 sizes the old generation by how fast it
 * marks on the main thread; marking concurrently, it took marking for nearly free and chose its smallest growth (10%),
 * which the 64 MiB young generation (SERVICE_NODE_FLAGS) left a few MB of: a runTest with push, whose batches promote a
 * few MB each, started a full collection every 150-250 ms, each ~90 ms of marking on V8's background threads (bench/cost:
 * the worker's CPU per thousand entities 38-43 ms, 30 ms with this, for some 30 MB more RSS).
 */
setHeapGrowingPercent(100);

const config = loadConfigOrExit();
const logger = createLogger("evaluation-worker", config.LOG_LEVEL, logDestination(config));
// A job uses one connection at a time; one more for pruning, one spare, two for evaluation on change (its pass, and
// a suspension or a test run it starts meanwhile).
const db = createDatabase(config.DATABASE_URL, {
  poolMax: config.EVALUATION_CONCURRENCY + 4,
  // the evaluation load of jobs that write nothing (evaluation.store.ts), and runTest's batches without a push
  replicas: { urls: config.DATABASE_REPLICA_URLS, maxLagMs: config.REPLICA_MAX_LAG_MS },
});
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
    runDiffs: {
      flapChanges: config.TEST_RUN_DIFF_FLAP_CHANGES,
      flapRuns: config.TEST_RUN_DIFF_FLAP_RUNS,
      maxRuns: config.TEST_RUN_DIFF_MAX_RUNS,
    },
    rootUserUrn: config.ROOT_USER_URN,
  },
  tasks,
);
const metrics = new WorkerMetrics(prom, logger);
// One worker per shard of the evaluate queue (QUEUE_SHARDS), sharing EVALUATION_CONCURRENCY.
const worker = createShardWorkers("evaluate", handler, {
  connection,
  prefix: config.QUEUE_PREFIX,
  shards: config.QUEUE_SHARDS,
  concurrency: config.EVALUATION_CONCURRENCY,
  logger,
  observer: metrics,
  leaseMs: tasks.leaseMs,
  onGivenUp: evaluationGivenUp(db, connection, logger, tasks),
  jobStartLogLevel,
});
const retention = new TaskRetention(tasks.evaluations);
// Test result transitions older than TEST_HISTORY_RETENTION_DAYS (each live pair's latest kept).
const historyRetention = new TestHistoryRetention(db.pool, config.TEST_HISTORY_RETENTION_DAYS);
// Lapsed leases wait again; test runs whose job vanished from Redis are queued again: once at this process's start.
const producerConnection = createRedis(config.REDIS_URL, "worker");
const producer = new Producer("evaluate", producerConnection, config.QUEUE_PREFIX, config.QUEUE_SHARDS);
const reconciler = new TaskReconciler(tasks, evaluationsReconciled(producer), logger);
void reconciler.reconcileCounted().catch((error: unknown) => logger.warn({ err: error }, "reconcile at start failed"));
// The cluster's chores: each firing of their job schedulers runs on one evaluation worker, not on every replica.
const chores = startChores(
  "evaluationChores",
  [
    { name: "reconcile-tasks", everyMs: RECONCILE_INTERVAL_MS, run: () => reconciler.reconcileCounted() },
    {
      name: "prune-evaluation-tasks",
      everyMs: TASK_PRUNE_EVERY_MS,
      run: async () => ({ deleted: await retention.prune() }),
    },
    {
      name: "prune-platform-events",
      everyMs: EVENT_PRUNE_EVERY_MS,
      run: async () => ({
        deleted: await prunePlatformEventsFully(handler.deps, config.PLATFORM_EVENT_RETENTION_DAYS),
      }),
    },
    {
      name: "prune-test-history",
      everyMs: HISTORY_PRUNE_EVERY_MS,
      run: async () => ({ deleted: await historyRetention.prune() }),
    },
    ...tableRetentionChores(db.pool, config),
  ],
  { connection, producerConnection, prefix: config.QUEUE_PREFIX, logger, observer: metrics },
);
// Scheduled tests: their firings become runTest tasks here, each counted against its owner's runTest limit on the
// gateway's keys; this process also takes its share of the schedule sync (the one writer of the schedulers).
const rateLimits = new RateLimits(RateLimits.connect(config, logger), config);
// Evaluation on change: the platform-event outbox's consumer, this worker's share of its partitions (leases).
const registry = EntityRegistry.load(config.ENTITY_REGISTRY_PATH);
const onChange = onChangeLoop(
  new OnChangeEvaluator(handler.deps, {
    batchSize: config.ON_CHANGE_BATCH_SIZE,
    rootUserUrn: config.ROOT_USER_URN,
    storable: (type) => registry.entityTypes().includes(type) && registry.aspectsOf(type).has("testResults"),
    startRun: onChangeRunStarter(handler.deps, producer, rateLimits),
    rateLimits,
    partitions: config.ON_CHANGE_PARTITIONS,
    leaseMs: config.ON_CHANGE_LEASE_MS,
    ownerBudgetMs: config.ON_CHANGE_OWNER_BUDGET_MS,
  }),
  config.ON_CHANGE_POLL_MS,
  logger,
);
const schedules = startSchedules({
  kinds: [scheduledTestKind],
  db,
  tasks,
  producers: { evaluate: producer },
  rootUserUrn: config.ROOT_USER_URN,
  urnNamespace: config.URN_NAMESPACE,
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
    // The read replicas as the gateway shows them: state and lag in /ready, in use and reads in /metrics.
    registries: [evaluationRegistry, ...(db.stale.replicated ? [replicaMetrics(prom, db.stale)] : [])],
    checks: { postgres: () => pingDatabase(db.prisma) },
    details: () => ({ replicas: replicaReadiness(db.stale) }),
  },
  resources: [
    () => onChange.stop(),
    () => schedules.stop(),
    () => chores.stop(),
    () => rateLimits.close(),
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
