/**
 * One evaluation worker in the test's process, as `main.ts` wires it (its handler and thread pool, the BullMQ worker
 * of the evaluate queue, evaluation on change, test runs started through `@mdp/tasks`), on real PostgreSQL and Redis of
 * the test's own (a fresh database and queue prefix), with no gateway: what a gateway would have written (aspects and
 * their outbox events, tests, policies, runTest tasks) is written here with `@mdp/db`'s and `@mdp/tasks`' own
 * statements. `workerTest` gives each test a started worker and stops it after.
 */
import { randomUUID } from "node:crypto";
import { createLogger, type Config, type PeriodicLoop, type Privilege } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import {
  AspectRepository,
  createDatabase,
  inPrismaTransaction,
  inTransaction,
  insertPolicy,
  insertTest,
  insertTestChangeEvent,
  updateTest,
  type Database,
} from "@mdp/db";
import { definitionFromJson } from "@mdp/metadata-tests";
import { closeRedis, closeWorker, createRedis, createWorker, Producer, RateLimits, runTestRequest } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import type { Job } from "bullmq";
import {
  evaluationGivenUp,
  evaluationHandler,
  OnChangeEvaluator,
  onChangeLoop,
  onChangeRunStarter,
} from "../../src/index";
import type { EvaluateDeps } from "../../src/evaluation-deps";
import type { OnChangePass, OnChangeSettings } from "../../src/on-change-settings";
import type { ImpactPreview } from "@mdp/queues";
import { startTestEnvironment } from "../../../../test/support/test-environment";
import { waitForState } from "../../../../test/support/wait-for-state";

export interface WorkerOptions {
  /** settings of the test's own (a limit, a lease), as the process would read them from its environment */
  env?: Record<string, string>;
  /** evaluation on change's settings, over the fixture's (one partition, a generous owner budget) */
  onChange?: Partial<OnChangeSettings>;
}

export interface WorkerFixture {
  config: Config;
  database: Database;
  /** evaluation on change on this worker's pool and pusher; a pass runs when called (or by `startOnChange`) */
  onChange: OnChangeEvaluator;
  /** runs evaluation on change every `pollMs`, as the worker process does, until stopped (or close) */
  startOnChange(pollMs?: number): PeriodicLoop;
  /**
   * Another worker's evaluation on change on the same database (the caller closes it): one whose settings differ, or
   * one that dies in the middle of a pass.
   */
  newOnChange(settings?: Partial<OnChangeSettings>, deps?: Pick<EvaluateDeps, "pusher">): OnChangeEvaluator;
  /** the worker's results pusher (a test wraps it to act in the middle of a push) */
  pusher: EvaluateDeps["pusher"];
  /** evaluation on change (this worker's, or `on`) until caught up with every committed change, as its loop does */
  settle(on?: OnChangeEvaluator): Promise<Omit<OnChangePass, "carried">>;
  /** writes a version of an aspect and its outbox event, as ingestion does, written by `actor` */
  ingest(urn: string, aspectName: string, value: unknown, actor?: string): Promise<void>;
  /** a test owned by `owner`, with the outbox event creating it writes (evaluation on change runs it) */
  createTest(id: string, definition: object, owner: string, more?: { evaluateOnChange?: boolean }): Promise<string>;
  /** `owner` sets a new definition (and owns the test), with the outbox event an edit writes */
  editTest(urn: string, definition: object, owner: string): Promise<void>;
  /** an ACTIVE policy granting `privileges` to `user`; its urn */
  grant(user: string, privileges: Privilege[]): Promise<string>;
  /** queues a runTest task for `actor`, as the gateway's runTest does; its id */
  runTest(testUrn: string, actor: string, options?: { push?: boolean; batchSize?: number }): Promise<string>;
  /**
   * Queues an impact preview of `definition` for the test, as the gateway's previewTestImpact does, and answers what
   * the worker returned (the gateway's reply channel is not listened to here: the job's return value is the answer).
   */
  preview(testUrn: string, definition: object, sampleSize?: number): Promise<ImpactPreview>;
  /** the evaluate queue's job of that id, as the queue dashboard shows it */
  job(jobId: string): Promise<Job | undefined>;
  /** runs `cleanup` at close, before the worker stops (connections a test opened) */
  defer(cleanup: () => Promise<void>): void;
  /** the task's row (state, progress, result, failedReason) once its state is one of `states` */
  waitForTask(taskId: string, states: readonly string[]): Promise<Record<string, unknown> & { state: string }>;
  /** the test's entry in the entity's latest testResults, if any */
  resultOf(urn: string, testUrn: string): Promise<"passing" | "failing" | undefined>;
  /** the latest version of an aspect and who wrote it, if any */
  latest(urn: string, aspectName: string): Promise<{ version: number; createdBy: string } | undefined>;
  /** the runTest tasks of a test: their states and who they run for */
  runsOf(testUrn: string): Promise<Array<{ state: string; created_by: string }>>;
  close(): Promise<void>;
}

export async function startWorkerFixture({ env = {}, onChange = {} }: WorkerOptions = {}): Promise<WorkerFixture> {
  const { config, drop } = await startTestEnvironment("evaluation_worker", env);
  const logger = createLogger("evaluation-worker-test", config.LOG_LEVEL);
  const concurrency = 4;
  // A pool of its own size, as the process's: pushes wait on row locks while holding a connection.
  const database = createDatabase(config.DATABASE_URL, { poolMax: concurrency + 4 });
  const connection = createRedis(config.REDIS_URL, "worker");
  const producerConnection = createRedis(config.REDIS_URL, "worker");
  const shutdown = new AbortController();
  const tasks = new TaskLifecycle(database, logger);
  const leases = tasks.keepLeases();
  const handler = evaluationHandler(
    database,
    connection,
    logger,
    shutdown.signal,
    config.EVALUATION_TIME_LIMIT_MS,
    {
      threads: 2,
      maxQueue: concurrency,
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
  const worker = createWorker("evaluate", handler, {
    connection,
    prefix: config.QUEUE_PREFIX,
    concurrency,
    logger,
    leaseMs: tasks.leaseMs,
    onGivenUp: evaluationGivenUp(database, connection, logger, tasks),
  });
  void worker.run();
  await worker.waitUntilReady();
  const producer = new Producer("evaluate", producerConnection, config.QUEUE_PREFIX);
  const rateLimits = new RateLimits(RateLimits.connect(config, logger), config);
  const newOnChange = (settings: Partial<OnChangeSettings> = {}, deps: Partial<Pick<EvaluateDeps, "pusher">> = {}) =>
    new OnChangeEvaluator(
      { ...handler.deps, ...deps },
      {
        batchSize: 1000,
        rootUserUrn: config.ROOT_USER_URN,
        storable: () => true,
        startRun: onChangeRunStarter(handler.deps, producer, rateLimits),
        rateLimits,
        // One partition and one holder for every evaluator of the test's database: a test calls their passes in turn.
        // A pass waits for every owner's evaluation (threads starting cold take longer than the production budget), so
        // what a pass answers is all it did.
        partitions: 1,
        leaseMs: config.ON_CHANGE_LEASE_MS,
        ownerBudgetMs: 60_000,
        holder: `test:${config.DATABASE_URL}`,
        ...onChange,
        ...settings,
      },
    );
  const evaluator = newOnChange();
  let loop: PeriodicLoop | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  const aspects = new AspectRepository();
  const { prisma, pool } = database;

  const task = async (taskId: string) => {
    const row = await tasks.read(taskId);
    if (!row) throw new Error(`no task ${taskId}`);
    return row as unknown as Record<string, unknown> & { state: string };
  };
  const storedDefinition = (definition: object) => {
    const parsed = definitionFromJson(definition);
    return {
      definitionText: JSON.stringify(definition),
      definition: parsed as unknown as object,
      onTypes: parsed.on.types.map((type) => type.toLowerCase()),
    };
  };

  return {
    config,
    database,
    onChange: evaluator,
    startOnChange: (pollMs = 50) => (loop ??= onChangeLoop(evaluator, pollMs, logger)),
    newOnChange,
    pusher: handler.deps.pusher,
    async settle(on = evaluator) {
      const done = { events: 0, entities: 0, pushed: 0, runs: 0, refused: 0 };
      for (;;) {
        const pass = await on.pass();
        if (!pass || pass.events === 0) return done;
        for (const key of Object.keys(done) as Array<keyof typeof done>) done[key] += pass[key];
      }
    },
    async ingest(urn, aspectName, value, actor = config.ROOT_USER_URN) {
      const write = { urn, entityType: urn.split(":")[2]!, aspectName, valueJson: JSON.stringify(value) };
      await inTransaction(pool, (client) => aspects.upsert(client, [write], actor));
    },
    async createTest(id, definition, owner, { evaluateOnChange = true } = {}) {
      const urn = `urn:li:test:${id}`;
      await inPrismaTransaction(prisma, async (tx) => {
        await insertTest(tx, {
          urn,
          name: id,
          category: "Quality",
          ...storedDefinition(definition),
          state: "ACTIVE",
          evaluateOnChange,
          createdBy: owner,
          ownerUrn: owner,
        });
        await insertTestChangeEvent(tx, { testUrn: urn, changeType: "UPSERT", actorUrn: owner });
      });
      return urn;
    },
    async editTest(urn, definition, owner) {
      await inPrismaTransaction(prisma, async (tx) => {
        await updateTest(tx, urn, { ...storedDefinition(definition), ownerUrn: owner });
        await insertTestChangeEvent(tx, { testUrn: urn, changeType: "UPSERT", actorUrn: owner });
      });
    },
    async grant(user, privileges) {
      const urn = `urn:li:dataHubPolicy:${user}:${privileges.join(",")}`;
      await insertPolicy(prisma, { urn, name: urn, state: "ACTIVE", privileges, users: [user] });
      return urn;
    },
    async runTest(testUrn, actor, { push = true, batchSize } = {}) {
      const { request, dedupKey } = runTestRequest(testUrn, { urn: actor }, push, batchSize);
      const { taskId } = await tasks.create(
        { type: "EVALUATE_TESTS", request, dedupKey, progress: {}, createdBy: actor, what: "a test run" },
        {
          enqueue: (id) => producer.enqueue(id, { ...request, taskId: id, actorUrn: actor }),
          jobExists: async (id) => Boolean(await producer.getJob(id)),
        },
      );
      return taskId;
    },
    async preview(testUrn, definition, sampleSize = 1000) {
      const parsed = storedDefinition(definition);
      const jobId = `preview-${randomUUID()}`;
      await producer.enqueue(jobId, {
        kind: "previewTest",
        testUrn,
        definition: parsed.definition,
        onTypes: parsed.onTypes,
        sampleSize,
        actorUrn: config.ROOT_USER_URN,
        replyTo: `preview-test:${jobId}`,
      });
      const job = await eventually(`preview ${jobId} answered`, async () => {
        const queued = await producer.getJob(jobId);
        return queued?.finishedOn ? queued : undefined;
      });
      if (job!.failedReason) throw new Error(`preview ${jobId} failed: ${job!.failedReason}`);
      return job!.returnvalue as ImpactPreview;
    },
    job: (jobId) => producer.getJob(jobId),
    defer: (cleanup) => void cleanups.push(cleanup),
    waitForTask: (taskId, states) => waitForState(task, taskId, states),
    async resultOf(urn, testUrn) {
      const results = (await aspects.latestOfEach(pool, "testResults", [urn])).get(urn) as
        { passing: Array<{ test: string }>; failing: Array<{ test: string }> } | undefined;
      if (results?.passing.some((r) => r.test === testUrn)) return "passing";
      if (results?.failing.some((r) => r.test === testUrn)) return "failing";
      return undefined;
    },
    async latest(urn, aspectName) {
      const { rows } = await pool.query<{ version: number; createdBy: string }>(
        `SELECT version, created_by AS "createdBy" FROM aspect WHERE urn = $1 AND aspect_name = $2
          ORDER BY version DESC LIMIT 1`,
        [urn, aspectName],
      );
      return rows[0];
    },
    async runsOf(testUrn) {
      const { rows } = await pool.query<{ state: string; created_by: string }>(
        "SELECT state, created_by FROM task WHERE type = 'EVALUATE_TESTS' AND request->>'testUrn' = $1",
        [testUrn],
      );
      return rows;
    },
    async close() {
      for (const cleanup of cleanups.reverse()) await cleanup();
      await (loop ? loop.stop() : evaluator.close());
      await closeWorker(worker);
      await producer.close();
      await rateLimits.close();
      leases.stop();
      await handler.close(); // the evaluation threads
      await Promise.allSettled([closeRedis(connection), closeRedis(producerConnection)]);
      await database.close();
      await drop();
    },
  };
}

/** A jest test given its own started worker (fresh database and queue prefix), stopped after it, pass or fail. */
export function workerTest(
  title: string,
  fn: (worker: WorkerFixture) => Promise<void>,
  options: WorkerOptions & { timeoutMs?: number } = {},
): void {
  it(
    title,
    async () => {
      const worker = await startWorkerFixture(options);
      try {
        await fn(worker);
      } finally {
        await worker.close();
      }
    },
    options.timeoutMs,
  );
}
