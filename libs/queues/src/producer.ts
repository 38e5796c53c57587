import { Queue, type Job, type JobsOptions } from "bullmq";
import type { RedisConnection } from "./connection";
import { currentLogContext, serviceUnavailable, withTimeout } from "@mdp/core";
import { PRODUCER_COMMAND_TIMEOUT_MS } from "./connection";
import { jobName, jobOptions } from "./job-options";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { PAYLOADS, type PayloadInput } from "./payloads";
import { shardCount, shardOf, shardPrefixes } from "./shards";
import { telemetry } from "./telemetry";

/**
 * How long queueing a job may take before the caller is told Redis is unavailable (503 with Retry-After): a Redis that
 * stalls (paused, swapping, failing over) would otherwise hold every request that queues a job for as long as it
 * stalls. The producer connections' command bound, kept here too whatever connection a producer is given (a worker's
 * has none). An add takes about a millisecond.
 */
export const ENQUEUE_TIMEOUT_MS = PRODUCER_COMMAND_TIMEOUT_MS;

/**
 * A typed producer for one queue. Payloads are validated before they reach Redis; BullMQ's OpenTelemetry integration
 * (bullmq-otel) puts the caller's trace context into the job's options, where the worker picks it up. A sharded queue
 * (shards.ts: `shards` is QUEUE_SHARDS, ignored for the queues never split) is one BullMQ queue per shard, each job on
 * the shard its id names (`queueFor`).
 */
export class Producer<Q extends QueueKey> {
  /** one per shard, in shard order */
  readonly queues: Queue[];

  constructor(
    readonly key: Q,
    connection: RedisConnection,
    prefix: string,
    shards = 1,
  ) {
    this.queues = shardPrefixes(prefix, shardCount(key, shards)).map(
      (shardPrefix) => new Queue(QUEUE_NAMES[key], { connection, prefix: shardPrefix, telemetry }),
    );
    for (const queue of this.queues) queue.on("error", ignoreQueueError);
  }

  /** The queue of an unsharded producer; shard 0 of a sharded one (use `queueFor` for a job's). */
  get queue(): Queue {
    return this.queues[0]!;
  }

  /** the shard's queue that holds (or will hold) the job `jobId` */
  queueFor(jobId: string): Queue {
    return this.queues[shardOf(jobId, this.queues.length)]!;
  }

  getJob(jobId: string): Promise<Job | undefined> {
    return this.queueFor(jobId).getJob(jobId);
  }

  async enqueue(
    jobId: string,
    payload: PayloadInput<Q>,
    overrides?: Pick<JobsOptions, "attempts" | "backoff">,
  ): Promise<Job> {
    // The request being handled, if any, travels with its job (an evaluate batch's items carry their own).
    const data = PAYLOADS[this.key].parse({ requestId: currentLogContext()?.requestId, ...payload });
    const kind = "kind" in data ? data.kind : undefined;
    const queue = this.queueFor(jobId);
    const added = queue.add(jobName(this.key, kind), data, {
      ...jobOptions(this.key, jobId, kind),
      ...overrides,
    });
    try {
      return await withTimeout(added, ENQUEUE_TIMEOUT_MS, () => new EnqueueTimeout(jobId));
    } catch (error) {
      // The add may still run once Redis answers again, after the caller was told it failed (and its task ended
      // failed): it is taken back off. Commands on one connection run in order, so the removal follows the add.
      if (error instanceof EnqueueTimeout || isCommandTimeout(error)) {
        added.catch(() => undefined);
        queue.remove(jobId).catch(() => undefined);
        throw serviceUnavailable("Redis");
      }
      throw error;
    }
  }

  /**
   * Queues many jobs in one round trip per shard (BullMQ's addBulk: one MULTI), each validated as `enqueue` does: for a producer
   * of hundreds of jobs at once (the webhooks' fan-out). Bounded by ENQUEUE_TIMEOUT_MS as a whole; on a timeout the
   * jobs may or may not be queued, which the caller's reconcile settles (their ids are deterministic).
   */
  async enqueueMany(
    jobs: ReadonlyArray<{ jobId: string; payload: PayloadInput<Q> }>,
    overrides?: Pick<JobsOptions, "attempts" | "backoff">,
  ): Promise<void> {
    if (jobs.length === 0) return;
    const requestId = currentLogContext()?.requestId;
    const byShard = new Map<Queue, Parameters<Queue["addBulk"]>[0]>();
    for (const { jobId, payload } of jobs) {
      const data = PAYLOADS[this.key].parse({ requestId, ...payload });
      const kind = "kind" in data ? data.kind : undefined;
      const queue = this.queueFor(jobId);
      const bulk = byShard.get(queue) ?? [];
      bulk.push({ name: jobName(this.key, kind), data, opts: { ...jobOptions(this.key, jobId, kind), ...overrides } });
      byShard.set(queue, bulk);
    }
    const added = Promise.all([...byShard].map(([queue, bulk]) => queue.addBulk(bulk)));
    try {
      await withTimeout(added, ENQUEUE_TIMEOUT_MS, () => serviceUnavailable("Redis"));
    } finally {
      added.catch(() => undefined);
    }
  }

  /** BullMQ's reason when the job failed for good (no attempt will come), else undefined (running, waiting, gone). */
  async failedReason(jobId: string): Promise<string | undefined> {
    const job = await this.getJob(jobId);
    if (!job || !(await job.isFailed())) return undefined;
    return job.failedReason || "Its job failed";
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}

class EnqueueTimeout extends Error {
  constructor(jobId: string) {
    super(`Redis did not queue job ${jobId} within ${ENQUEUE_TIMEOUT_MS} ms`);
  }
}

/** ioredis's error for a command past the connection's commandTimeout (createRedis: producers) */
const isCommandTimeout = (error: unknown) => error instanceof Error && error.message === "Command timed out";

/**
 * A queue re-emits its connection's errors (Redis away: ECONNREFUSED on every reconnect attempt); unheard, BullMQ
 * prints each with console.error. Every command that fails rejects to its caller, which reports it (a 503, a logged
 * retry), so the event only repeats what is already said.
 */
export function ignoreQueueError(): void {}
