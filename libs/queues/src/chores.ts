import { UnrecoverableError, type Job, type Worker } from "bullmq";
import { every, type Logger, type RunSummary } from "@mdp/core";
import type { RedisConnection } from "./connection";
import { scheduleJobOptions } from "./job-options";
import type { QueueKey } from "./names";
import type { Payload } from "./payloads";
import { Producer } from "./producer";
import { closeWorker, createWorker, type JobObserver } from "./worker";

/** The queues whose jobs are chores: one job per firing, told apart by the job's name. */
export type ChoreQueue = Extract<
  QueueKey,
  "scheduleSync" | "truncationChores" | "evaluationChores" | "webhookChores" | "gatewayChores"
>;

/**
 * Something the cluster does once per firing, not once per replica: a BullMQ job scheduler on the chore's queue
 * fires it (its id and its jobs' name are the chore's `name`, as Bull Board shows them), and whichever worker of the
 * queue takes the job runs it.
 */
export interface Chore<Q extends ChoreQueue = ChoreQueue> {
  /** readable, unique on its queue, without ':' (BullMQ builds keys with it): `reconcile-tasks` */
  name: string;
  /** how often it fires; absent: it runs only when a job of its name is added (schedule-sync's `sync-schedule`) */
  everyMs?: number;
  /** what a firing does; what it returns is logged and kept as the job's result */
  run: (payload: Payload<Q>, job: Job) => Promise<RunSummary>;
}

/** How often each process checks that its chores' job schedulers are there (after a Redis that lost its data). */
export const CHORE_SCHEDULERS_CHECK_MS = 60_000;

export interface ChoresOptions {
  /** the worker's blocking connection */
  connection: RedisConnection;
  /** for the schedulers and added jobs */
  producerConnection: RedisConnection;
  prefix: string;
  logger: Logger;
  observer?: JobObserver;
  /** how many of the queue's jobs run at once in the whole cluster (BullMQ's global concurrency); absent: no bound */
  globalConcurrency?: number;
  checkEveryMs?: number;
  /**
   * told each time the producer connection is ready again after losing Redis, once this process's schedulers are
   * checked (a Redis restarted without persistence, or a failover that lost writes, comes back without them)
   */
  onRedisBack?: () => Promise<void>;
}

export interface RunningChores {
  worker: Worker;
  /** the chores' queue, for adding a job of a chore by hand */
  producer: Producer<ChoreQueue>;
  /** makes the schedulers match the chores now (what start-up and the check do) */
  ensureSchedulers: () => Promise<void>;
  /** force: without waiting for a firing in flight (a chore is idempotent: its job is taken again once its lock lapses) */
  stop: (options?: { force?: boolean }) => Promise<void>;
}

/**
 * Runs a process's share of the chores of one queue: a worker (one job at a time in this process) that runs each
 * firing's chore by the job's name, and a per-process check, at start and every CHORE_SCHEDULERS_CHECK_MS, that each
 * periodic chore's job scheduler exists with its interval (upserted only when missing or different: an upsert of an
 * unchanged scheduler is left alone, so replicas checking at once do not move or add firings). Every replica runs
 * this; each firing is one job, which one worker takes: the chore runs once per firing in the whole cluster.
 */
export function startChores<Q extends ChoreQueue>(
  key: Q,
  chores: ReadonlyArray<Chore<Q>>,
  options: ChoresOptions,
): RunningChores {
  const byName = new Map(chores.map((c) => [c.name, c]));
  const producer = new Producer<ChoreQueue>(key, options.producerConnection, options.prefix);
  const queue = producer.queue;
  const worker = createWorker(
    key,
    async (payload, job) => {
      const chore = byName.get(job.name);
      if (!chore) throw new UnrecoverableError(`No chore named '${job.name}' on ${queue.name}`);
      const summary = await chore.run(payload as Payload<Q>, job);
      // what a firing changed at info; one that found nothing to do (every count 0) at debug
      if (summary)
        options.logger[didSomething(summary) ? "info" : "debug"](
          { chore: chore.name, ...summary },
          `${chore.name}: ran`,
        );
      return summary ?? null;
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: 1,
      logger: options.logger,
      observer: options.observer,
      jobLogLevel: "debug",
    },
  );
  const ensureSchedulers = async () => {
    if (options.globalConcurrency !== undefined) await queue.setGlobalConcurrency(options.globalConcurrency);
    for (const chore of chores) {
      if (chore.everyMs === undefined) continue;
      const current = await queue.getJobScheduler(chore.name);
      if (current && Number(current.every) === chore.everyMs) continue;
      await queue.upsertJobScheduler(
        chore.name,
        { every: chore.everyMs },
        { name: chore.name, data: {}, opts: scheduleJobOptions() },
      );
      options.logger.info({ chore: chore.name, everyMs: chore.everyMs }, "chore scheduled");
    }
  };
  const check = every(
    `chore-schedulers:${queue.name}`,
    options.checkEveryMs ?? CHORE_SCHEDULERS_CHECK_MS,
    ensureSchedulers,
    {
      logger: options.logger,
      runAtStart: true,
    },
  );
  // Redis back after a loss of its connection: the schedulers are checked at once, not at the next periodic check, so
  // a Redis that came back empty fires the chores (and, through onRedisBack, the schedules) on time.
  const stopWatching = onRedisBack(options.producerConnection, async () => {
    try {
      await ensureSchedulers();
      await options.onRedisBack?.();
    } catch (error) {
      options.logger.warn({ err: error }, `chores of ${queue.name}: could not check the schedulers after a reconnect`);
    }
  });
  // A run that ends in an error (its connection closed under it, as when Redis goes away while the process stops) is
  // logged, never an unhandled rejection: the gateway runs chores too, and must not die of one.
  worker
    .run()
    .catch((error: unknown) => options.logger.warn({ err: error }, `chores of ${queue.name}: worker stopped`));
  return {
    worker,
    producer,
    ensureSchedulers,
    stop: async ({ force = false } = {}) => {
      stopWatching();
      await check.stop();
      await closeWorker(worker, { force });
      await producer.close();
    },
  };
}

/** Whether a chore's summary counts anything: a number other than 0, at any depth, or anything not a number. */
function didSomething(summary: unknown): boolean {
  if (typeof summary === "number") return summary !== 0;
  if (summary && typeof summary === "object") return Object.values(summary).some(didSomething);
  return summary !== undefined && summary !== null;
}

/**
 * Calls `back` at each `ready` of `connection` that follows a loss of it (`reconnecting`), never at the first one:
 * what a process does when Redis is there again, perhaps without its data. Returns the un-subscription.
 */
export function onRedisBack(connection: RedisConnection, back: () => Promise<void>): () => void {
  let lost = false;
  const onLost = () => {
    lost = true;
  };
  const onReady = () => {
    if (!lost) return;
    lost = false;
    void back();
  };
  connection.on("reconnecting", onLost);
  connection.on("ready", onReady);
  return () => {
    connection.off("reconnecting", onLost);
    connection.off("ready", onReady);
  };
}
