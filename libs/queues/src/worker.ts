import { DelayedError, UnrecoverableError, Worker, type Job, type Processor } from "bullmq";
import { performance } from "node:perf_hooks";
import { withLogContext, type LogContext } from "@mdp/core";
import { settleReconnect, type RedisConnection } from "./connection";
import type { Logger } from "@mdp/core";
import { workerOptions } from "./job-options";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { PAYLOADS, type Payload } from "./payloads";
import { shardCount, shardPrefixes } from "./shards";
import { telemetry } from "./telemetry";

/** `token` is the job's lock token, needed to hand a job back to the queue (job.moveToDelayed). */
export type JobHandler<Q extends QueueKey> = (
  payload: Payload<Q>,
  job: Job,
  token: string | undefined,
) => Promise<unknown>;

export interface WorkerOptions<Q extends QueueKey = QueueKey> {
  connection: RedisConnection;
  prefix: string;
  concurrency: number;
  logger: Logger;
  /**
   * Called when BullMQ fails a job without running the handler: a job that stalled (its worker died or hung) more
   * often than the queue allows is failed by the next worker to fetch it. The handler, which records how its attempts
   * end, never sees that last one; this is where the task it stood for is marked as failed.
   */
  onGivenUp?: (payload: Payload<Q>, job: Job, reason: string) => Promise<void>;
  /** told how each run of the handler ended (the worker's metrics, worker-monitor.ts) */
  observer?: JobObserver;
  /** the lease of the tasks its jobs run (TaskLifecycle.leaseMs): a dead worker's jobs come back within it */
  leaseMs?: number;
  /**
   * the level of a job's `job started` line and of its `job ended` unless it failed (then warn); default info. The
   * chores' firings (every 15 s) log at debug, so a terminal running the services is not a scroll of them.
   */
  jobLogLevel?: "info" | "debug";
  /**
   * the level of a job's `job started` line, when not jobLogLevel: the evaluation worker's evaluate batches (many a
   * second, each over in milliseconds) log it at debug, their `job ended` line saying all it did (queue, job id and
   * name, attempt, items, request ids) with the outcome and duration, so each costs one synchronous write, not two
   */
  jobStartLogLevel?: (job: Job) => "info" | "debug";
}

/**
 * How one run of a job's handler ended: `completed`; `cancelled` (JobCancelledError: its task was cancelled);
 * `retried` (it threw with attempts left); `failed` (it threw on its last attempt, or unrecoverably); `delayed` (it
 * handed itself back to the queue: shutdown, a held lease, a fair-share wait).
 */
export type JobOutcome = "completed" | "cancelled" | "retried" | "failed" | "delayed";
export const JOB_OUTCOMES: readonly JobOutcome[] = ["completed", "cancelled", "retried", "failed", "delayed"];

export interface JobObserver {
  /** `seconds`: how long the handler ran; absent for a job BullMQ failed without running it */
  jobEnded(queue: QueueKey, outcome: JobOutcome, seconds?: number): void;
}

/**
 * Thrown by a handler whose task was cancelled: the job is not retried; it ends completed with `{cancelled: true,
 * reason}` as its value, and its outcome reads `cancelled`.
 */
export class JobCancelledError extends UnrecoverableError {
  override name = "JobCancelledError";
}

function outcomeOf(error: unknown, job: Job): JobOutcome {
  if (error instanceof DelayedError) return "delayed";
  if (error instanceof JobCancelledError) return "cancelled";
  if (error instanceof UnrecoverableError) return "failed";
  return job.attemptsMade + 1 < (job.opts.attempts ?? 1) ? "retried" : "failed";
}

/** The request ids a job carries (its own, or its items' for an evaluate batch), read before the payload is checked. */
function logContextOf(data: unknown): LogContext {
  const { requestId, items } = (data ?? {}) as { requestId?: unknown; items?: unknown };
  if (typeof requestId === "string") return { requestId };
  if (!Array.isArray(items)) return {};
  const ids = [...new Set(items.map((i) => (i as { requestId?: unknown })?.requestId))].filter(
    (id): id is string => typeof id === "string",
  );
  return ids.length === 1 ? { requestId: ids[0] } : ids.length > 1 ? { requestIds: ids } : {};
}

/**
 * A typed worker for one queue. The payload is re-checked here (a job can outlive the code that queued it); a
 * payload that will never parse fails without retries. The worker does not run until `run()` is called, so a process
 * takes work only once it is ready.
 */
export function createWorker<Q extends QueueKey>(key: Q, handler: JobHandler<Q>, options: WorkerOptions<Q>): Worker {
  const run = async (job: Job, token: string | undefined) => {
    const parsed = PAYLOADS[key].safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(`Invalid ${QUEUE_NAMES[key]} payload: ${parsed.error.message}`);
    }
    return handler(parsed.data as Payload<Q>, job, token);
  };
  // Inside BullMQ's "process" span (bullmq-otel), a child of the span the job was queued in, and with the request id
  // that queued it: every line logged for the job carries both. One line when it starts, one when it ends.
  const processor: Processor = (job, token) =>
    withLogContext(logContextOf(job.data), async () => {
      const items = (job.data as { items?: unknown } | undefined)?.items;
      const fields = {
        queue: QUEUE_NAMES[key],
        jobId: job.id,
        jobName: job.name,
        attempt: job.attemptsMade + 1,
        ...(Array.isArray(items) ? { items: items.length } : {}),
      };
      const level = options.jobLogLevel ?? "info";
      options.logger[options.jobStartLogLevel?.(job) ?? level](fields, "job started");
      const started = performance.now();
      const ended = (outcome: JobOutcome, error?: unknown) => {
        const ms = performance.now() - started;
        options.observer?.jobEnded(key, outcome, ms / 1000);
        const line = { ...fields, outcome, durationMs: Math.round(ms), ...(error ? { err: messageOf(error) } : {}) };
        if (outcome === "failed" || outcome === "retried") options.logger.warn(line, "job ended");
        else options.logger[level](line, "job ended");
      };
      try {
        const result = await run(job, token);
        ended("completed");
        return result;
      } catch (error) {
        const outcome = outcomeOf(error, job);
        ended(outcome, outcome === "delayed" ? undefined : error);
        // A cancelled task's job ends completed, its value saying so: the dashboard must not list an operator's
        // cancel among the failures, nor offer to retry (run again) what was cancelled.
        if (outcome === "cancelled") return { cancelled: true, reason: messageOf(error) };
        throw error;
      }
    });
  const worker = new Worker(QUEUE_NAMES[key], processor, {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    autorun: false,
    telemetry,
    ...workerOptions(key, options.leaseMs),
  });
  worker.on("failed", (job, error) => {
    // deferredFailure: BullMQ's mark on a job it fails without running (see onGivenUp); a run's end is logged above.
    if (!job?.deferredFailure) return;
    options.logger.warn({ queue: QUEUE_NAMES[key], jobId: job.id, err: error.message }, "job given up");
    options.observer?.jobEnded(key, "failed");
    if (!options.onGivenUp) return;
    const parsed = PAYLOADS[key].safeParse(job.data);
    if (!parsed.success) return;
    options
      .onGivenUp(parsed.data as Payload<Q>, job, job.deferredFailure)
      .catch((cause: unknown) =>
        options.logger.error({ jobId: job.id, err: cause }, "could not record a job BullMQ gave up on"),
      );
  });
  worker.on("error", (error) => options.logger.error({ err: error.message }, "worker error"));
  return worker;
}

/**
 * A worker for each shard of a sharded queue (shards.ts; `shards` is QUEUE_SHARDS): one BullMQ worker per shard,
 * the process's `concurrency` shared out among them (the shards take even shares of the jobs, their ids hashed), so
 * the process runs no more jobs at once than it would on one queue. One shard: the one worker of `createWorker`.
 */
export function createShardWorkers<Q extends QueueKey>(
  key: Q,
  handler: JobHandler<Q>,
  options: WorkerOptions<Q> & { shards: number },
): Worker[] {
  const { shards, ...rest } = options;
  const prefixes = shardPrefixes(options.prefix, shardCount(key, shards));
  const share = (i: number) =>
    Math.max(
      1,
      Math.floor(options.concurrency / prefixes.length) + (i < options.concurrency % prefixes.length ? 1 : 0),
    );
  return prefixes.map((prefix, i) => createWorker(key, handler, { ...rest, prefix, concurrency: share(i) }));
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Closes `worker` (`force`: without waiting for its jobs in flight) leaving nothing armed behind. BullMQ closes the
 * connections it made for the worker (its blocking one, a duplicate of the one passed); one that is reconnecting is
 * given its chance first (settleReconnect): closed mid-reconnect, ioredis arms a 2 s wait for the end of a socket
 * that has already closed, and, for a wait in flight on it, BullMQ's watchdog of that wait stays armed for the block
 * time plus a second; either keeps the process alive after close has returned.
 */
export async function closeWorker(worker: Worker, { force = false } = {}): Promise<void> {
  // an ioredis client (BullMQ's Redis backend); not yet there if it never connected, and none if its setting-up failed
  // (its Redis given up on, or refused by BullMQ's version check): the worker is closed all the same.
  const blocking = await Promise.race([worker.backend.blockingClient, Promise.resolve(undefined)]).catch(
    () => undefined,
  );
  if (blocking) await settleReconnect(blocking as unknown as RedisConnection);
  await worker.close(force);
}
