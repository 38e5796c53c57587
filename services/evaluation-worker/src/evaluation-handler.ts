import type { Logger } from "@mdp/core";
import { AspectRepository, ownerPrivilegesReader, type Database } from "@mdp/db";
import type { Job } from "bullmq";
import {
  EVALUATE_MAX_ITEMS,
  sendReply,
  type JobHandler,
  type Payload,
  type Producer,
  type RedisConnection,
} from "@mdp/queues";
import { reconciledKind, TaskLifecycle, type ReconciledKind } from "@mdp/tasks";
import type { EvaluateDeps } from "./evaluation-deps";
import { evaluate, recordEvaluateFailure } from "./evaluate.processor";
import { EvaluationStore } from "./evaluation.store";
import { EvaluationPool, type PoolSettings } from "./evaluation-pool";
import { withJobShare } from "./fair-share";
import { ResultsPusher } from "./results.pusher";
import { TestResultHistory } from "./test-result-history";
import { DEFAULT_RUN_DIFF_SETTINGS, TestRunDiffs, type RunDiffSettings } from "./test-run-diff";
import { runTestKind, runTestRunner } from "./run-test.processor";
import { previewTest } from "./preview-test.processor";

/**
 * The level of a job's `job started` line (createWorker's jobStartLogLevel): an evaluate batch's at debug, its
 * `job ended` line (at info) saying all the start line did (queue, job, attempt, items, request ids); a runTest's or
 * previewTest's at info, as they can run for minutes.
 */
export function jobStartLogLevel(job: Pick<Job, "data">): "info" | "debug" {
  return (job.data as { kind?: unknown } | undefined)?.kind === "evaluate" ? "debug" : "info";
}

/** The evaluate-tests handler: an "evaluate" job answers waiting callers; a "runTest" job is a background task. */
export function createEvaluateHandler(deps: EvaluateDeps): JobHandler<"evaluate"> {
  const runTest = runTestRunner(deps).handler("runTest");
  return async (payload, job, token) => {
    if (payload.kind === "runTest") return runTest(payload, job, token);
    if (payload.kind === "previewTest") return previewTest(deps, payload, job);
    // The rows of its items that the job makes active are renewed while it runs, and only while it runs.
    const held = deps.tasks.holdRows(payload.items.map((i) => i.taskId));
    try {
      return await evaluate(deps, payload, job);
    } finally {
      held.release();
    }
  };
}

/** The evaluate-tests handler, and how to stop the threads it evaluates in (after the BullMQ worker has closed). */
export type EvaluationHandler = JobHandler<"evaluate"> & {
  close(): Promise<void>;
  /** what it evaluates with: its pool, pusher and stores (evaluation on change shares them, see on-change.consumer.ts) */
  deps: EvaluateDeps;
};

/**
 * The evaluate-tests handler wired to its collaborators on one database, replying to waiting gateways on `redis` (a
 * command connection, such as the worker's own): what main.ts and the tests both run. It starts the evaluation
 * threads at once (see EvaluationPool); `close()` destroys them.
 */
export function evaluationHandler(
  db: Database,
  redis: RedisConnection,
  logger: Logger,
  shutdownSignal: AbortSignal,
  /** EVALUATION_TIME_LIMIT_MS */
  timeLimitMs = 10_000,
  /**
   * EVALUATION_THREADS, EVALUATION_MEMORY_LIMIT_MB and the jobs run at once (EVALUATION_CONCURRENCY), whose requests
   * are a task per actor in the pool
   */
  {
    threads = 2,
    memoryLimitMb = 128,
    maxQueue = 8,
    historyMaxTransitions,
    runDiffs = DEFAULT_RUN_DIFF_SETTINGS,
    rootUserUrn,
  }: Partial<Omit<PoolSettings, "timeLimitMs">> & {
    /** TEST_HISTORY_MAX_TRANSITIONS: what each (entity, test) pair's result history keeps */
    historyMaxTransitions?: number;
    /** TEST_RUN_DIFF_FLAP_CHANGES, TEST_RUN_DIFF_FLAP_RUNS, TEST_RUN_DIFF_MAX_RUNS */
    runDiffs?: RunDiffSettings;
    /** ROOT_USER_URN: the root user's built-in policy counts when a test owner's grants are read */
    rootUserUrn: string;
  },
  /** the task lifecycle whose leases the process renews (keepLeases); one of its own by default */
  tasks: TaskLifecycle = new TaskLifecycle(db, logger),
): EvaluationHandler {
  const pool = new EvaluationPool({
    threads,
    memoryLimitMb,
    maxQueue: maxQueue * EVALUATE_MAX_ITEMS,
    timeLimitMs,
    jobs: maxQueue,
  });
  // Jobs take the worker's slots by actor (see JobShare), so one actor's backlog cannot fill them all.
  // Uncached: a test's actions write only what its owner holds at that moment.
  const ownerPrivileges = ownerPrivilegesReader(db.prisma, rootUserUrn);
  const deps: EvaluateDeps = {
    db,
    store: new EvaluationStore(db.pool, tasks.evaluations, db.stale),
    pool,
    pusher: new ResultsPusher(new AspectRepository(), ownerPrivileges, new TestResultHistory(historyMaxTransitions)),
    runDiffs: new TestRunDiffs(runDiffs),
    ownerPrivileges,
    tasks,
    reply: (channel, reply) => sendReply(redis, channel, reply),
    logger,
    shutdownSignal,
  };
  const evaluate = createEvaluateHandler(deps);
  const handler = withJobShare(evaluate, pool.jobShare);
  return Object.assign(handler, { close: () => pool.close(), deps });
}

/**
 * What becomes of a job BullMQ failed without running it (createWorker's onGivenUp): a test run's row, or the rows of
 * an evaluate job's requests, end as failed with BullMQ's reason, and a waiting gateway is told at once.
 */
export function evaluationGivenUp(
  db: Database,
  redis: RedisConnection,
  logger: Logger,
  tasks: TaskLifecycle = new TaskLifecycle(db, logger),
): (payload: Payload<"evaluate">, job: Job, reason: string) => Promise<void> {
  const reply = (channel: string, message: Parameters<typeof sendReply>[2]) => sendReply(redis, channel, message);
  return async (payload, job, reason) => {
    if (payload.kind === "runTest") {
      await tasks.giveUp(payload.taskId, reason);
    } else if (payload.kind === "previewTest") {
      // Nothing was written: the waiting gateway hears the reason at once.
      await reply(payload.replyTo, { jobId: job.id!, failedReason: reason });
    } else {
      const failedReason = `Given up after its workers stopped during it too often: ${reason}`;
      await recordEvaluateFailure({ tasks, reply, logger }, payload, job, new Date(), { failedReason, final: true });
    }
  };
}

/**
 * The reconciler's view of evaluate-tests tasks: a test run whose job vanished from Redis is queued again from its
 * row (it resumes after its last committed batch). A 504'd evaluation's row is not: its job (a batch of several
 * callers' requests, under an id of its own) is followed by the gateway that wrote the row (recordPending).
 */
export function evaluationsReconciled(producer: Producer<"evaluate">): ReconciledKind[] {
  return [reconciledKind(runTestKind, producer)];
}
