/** A real evaluation worker (BullMQ, PostgreSQL) in the test's process, on a gateway harness's database and queues. */
import { createLogger, type PeriodicLoop } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import type { Redis } from "ioredis";
import { closeRedis, closeWorker, createRedis, createWorker, Producer } from "@mdp/queues";
import {
  evaluationGivenUp,
  evaluationHandler,
  OnChangeEvaluator,
  onChangeLoop,
  onChangeRunStarter,
  type OnChangeSettings,
} from "evaluation-worker";
import type { Harness } from "./gateway-harness";

export interface RunningWorker {
  /** aborts like SIGTERM would: a running test run hands its job back */
  shutdown: AbortController;
  /** evaluation on change on this worker's pool and pusher; its passes run when called (or by `startOnChange`) */
  onChange: OnChangeEvaluator;
  /** runs evaluation on change every `pollMs`, as the worker process does, until stopped (or close) */
  startOnChange(pollMs?: number): PeriodicLoop;
  close(): Promise<void>;
}

/**
 * `loseReplies`: the worker's replies are counted as delivered but never arrive, as when a gateway's subscriber
 * connection drops them.
 */
export async function startEvaluationWorker(
  h: Harness,
  concurrency = 4,
  {
    loseReplies = false,
    threads = 2,
    onChange: onChangeSettings = {},
  }: { loseReplies?: boolean; threads?: number; onChange?: Partial<OnChangeSettings> } = {},
): Promise<RunningWorker> {
  // A pool of its own: pushes wait on row locks while holding a connection, as in the real process.
  const db = createDatabase(h.config.DATABASE_URL, { poolMax: concurrency + 4 });
  const connection = createRedis(h.config.REDIS_URL, "worker");
  const logger = createLogger("evaluation-worker-test", h.config.LOG_LEVEL);
  const shutdown = new AbortController();
  const replies = loseReplies ? ({ publish: () => Promise.resolve(1) } as unknown as Redis) : connection;
  // maxQueue: the jobs the BullMQ worker runs at once, which the handler shares between actors.
  const handler = evaluationHandler(db, replies, logger, shutdown.signal, h.config.EVALUATION_TIME_LIMIT_MS, {
    threads,
    maxQueue: concurrency,
    rootUserUrn: h.config.ROOT_USER_URN,
  });
  const worker = createWorker("evaluate", handler, {
    connection,
    prefix: h.config.QUEUE_PREFIX,
    concurrency,
    logger,
    onGivenUp: evaluationGivenUp(db, connection, logger),
  });
  void worker.run();
  await worker.waitUntilReady();
  const producer = new Producer("evaluate", connection, h.config.QUEUE_PREFIX);
  const onChange = new OnChangeEvaluator(handler.deps, {
    batchSize: 1000,
    rootUserUrn: h.config.ROOT_USER_URN,
    storable: () => true,
    // counted against the owners' runTest limit on the gateway's keys, as the worker process does
    startRun: onChangeRunStarter(handler.deps, producer, h.services.rateLimits),
    // One partition, and one holder for every worker of the test's database: a test calls their passes in turn (a
    // test of partitions names its own). A pass waits for every owner's evaluation (threads starting cold take longer
    // than the production budget), so what a pass answers is all it did; a test of the budget sets it.
    partitions: 1,
    leaseMs: h.config.ON_CHANGE_LEASE_MS,
    ownerBudgetMs: 60_000,
    holder: `test:${h.config.DATABASE_URL}`,
    ...onChangeSettings,
  });
  let loop: ReturnType<typeof onChangeLoop> | undefined;
  return {
    shutdown,
    onChange,
    startOnChange: (pollMs = 50) => (loop ??= onChangeLoop(onChange, pollMs, logger)),
    close: async () => {
      await (loop ? loop.stop() : onChange.close());
      await closeWorker(worker);
      await producer.close();
      await handler.close(); // the evaluation threads
      await closeRedis(connection);
      await db.close();
    },
  };
}
