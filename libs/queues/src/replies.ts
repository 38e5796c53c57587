import { randomUUID } from "node:crypto";
import type { RedisConnection } from "./connection";

/** The job did not finish within the wait; it may still finish later. */
export class JobWaitTimeoutError extends Error {
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super(`Job ${jobId} did not finish within ${timeoutMs} ms`);
    this.name = "JobWaitTimeoutError";
  }
}

/** The job failed for good (BullMQ will not retry it). */
export class JobFailedError extends Error {
  constructor(
    readonly jobId: string,
    readonly failedReason: string,
  ) {
    super(`Job ${jobId} failed: ${failedReason}`);
    this.name = "JobFailedError";
  }
}

/** What a worker sends back to the process waiting for a job: its return value, or why it failed for good. */
export type JobReply = { jobId: string; returnvalue: unknown } | { jobId: string; failedReason: string };

/**
 * A reply's sender learns from the publish's answer whether anyone received it. On a Redis Cluster, PUBLISH reaches
 * every node's subscribers but counts only those of the node it ran on; sharded pub/sub (SPUBLISH/SSUBSCRIBE, Redis 7)
 * keeps a channel on the node that owns its slot, subscribers included, so its count is whole. A single server keeps
 * classic pub/sub. (A cluster's subscriber connection is created with ioredis's `shardedSubscribers`: createRedis.)
 */
const sharded = (redis: RedisConnection) => redis.isCluster;

/**
 * Sends a job's reply to the channel its producer named in the payload (`replyTo`). Resolves to whether a process
 * was subscribed to receive it (false: the producer is gone or disconnected, and its callers will time out).
 */
export async function sendReply(redis: RedisConnection, channel: string, reply: JobReply): Promise<boolean> {
  const message = JSON.stringify(reply);
  // SPUBLISH answers the number of receivers, as PUBLISH does (ioredis types it unknown).
  const received = sharded(redis)
    ? Number(await redis.spublish(channel, message))
    : await redis.publish(channel, message);
  return received > 0;
}

/**
 * Subscribes `subscriber` (a subscriber connection) to the replies sent to `channel` by sendReply; resolves once the
 * subscription holds, to the function that ends it.
 */
export async function subscribeToReplies(
  subscriber: RedisConnection,
  channel: string,
  onReply: (message: string) => void,
): Promise<() => Promise<void>> {
  const event = sharded(subscriber) ? "smessage" : "message";
  const listener = (from: string, message: string) => {
    if (from === channel) onReply(message);
  };
  subscriber.on(event, listener);
  await (sharded(subscriber) ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel));
  return async () => {
    subscriber.off(event, listener);
    await (sharded(subscriber) ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel)).catch(
      () => undefined,
    );
  };
}

interface Waiter {
  /** takes one reply's return value; true when the wait is over */
  take: (value: unknown) => boolean;
  reject: (error: unknown) => void;
}

/**
 * Where one process receives the replies to the jobs it waits for: a Redis pub/sub channel of its own, named in each
 * job's payload, on which the worker publishes the job's outcome. BullMQ's QueueEvents would deliver every event of
 * the queue, every job's return value included, to every waiting process; with many gateways each would then parse
 * the whole cluster's results to find its own, so its cost would grow with the cluster rather than with its traffic.
 * A reply lost while the subscriber is disconnected ends as a timeout, which callers already handle (the task row
 * still says how the job ended).
 */
export class ReplyInbox {
  private readonly waiting = new Map<string, Waiter>();

  private unsubscribe: () => Promise<void> = async () => {};

  private constructor(
    /** the channel to name in payloads as `replyTo` */
    readonly channel: string,
  ) {}

  /**
   * Subscribes on `subscriber`, a connection in subscriber mode: it can run no other command, though other
   * subscriptions may share it.
   */
  static async open(subscriber: RedisConnection, prefix: string, queueName: string): Promise<ReplyInbox> {
    const inbox = new ReplyInbox(`${prefix}:${queueName}:replies:${randomUUID()}`);
    inbox.unsubscribe = await subscribeToReplies(subscriber, inbox.channel, (message) => inbox.deliver(message));
    return inbox;
  }

  /**
   * Adds a job (through `enqueue`, which must name this inbox's channel in it) and waits for its reply. The waiter is
   * in place before the job exists, so a fast reply cannot be missed. Rejects with JobWaitTimeoutError or
   * JobFailedError, or with whatever `enqueue` threw.
   */
  enqueueAndWait(jobId: string, timeoutMs: number, enqueue: () => Promise<unknown>): Promise<unknown> {
    let returned: unknown;
    return this.enqueueAndCollect(jobId, timeoutMs, enqueue, (value) => {
      returned = value;
      return true;
    }).then(() => returned);
  }

  /**
   * Like enqueueAndWait, for a job whose worker replies in parts (an evaluate job answers each request as soon as it
   * is done): `take` is given each reply's return value, and returns true once it has had the last one. Resolves
   * then; rejects with JobWaitTimeoutError when the parts do not all come within `timeoutMs`, with JobFailedError
   * when the job fails for good (the parts already taken stand), or with whatever `enqueue` or `take` threw.
   */
  enqueueAndCollect(
    jobId: string,
    timeoutMs: number,
    enqueue: () => Promise<unknown>,
    take: (value: unknown) => boolean,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const settle = (finish: () => void) => {
        clearTimeout(timer);
        this.waiting.delete(jobId);
        finish();
      };
      const timer = setTimeout(() => settle(() => reject(new JobWaitTimeoutError(jobId, timeoutMs))), timeoutMs);
      this.waiting.set(jobId, {
        take: (value) => {
          let done: boolean;
          try {
            done = take(value);
          } catch (error) {
            settle(() => reject(error));
            return true;
          }
          if (done) settle(resolve);
          return done;
        },
        reject: (error) => settle(() => reject(error)),
      });
      enqueue().catch((error: unknown) => this.waiting.get(jobId)?.reject(error));
    });
  }

  async close(): Promise<void> {
    await this.unsubscribe();
  }

  private deliver(message: string): void {
    let reply: JobReply;
    try {
      reply = JSON.parse(message) as JobReply;
    } catch {
      return; // not ours to understand; the waiter times out
    }
    if (typeof reply !== "object" || reply === null || typeof reply.jobId !== "string") return;
    const waiter = this.waiting.get(reply.jobId);
    if (!waiter) return; // a reply to a wait that already timed out, or a retried job's second reply
    if ("failedReason" in reply) waiter.reject(new JobFailedError(reply.jobId, reply.failedReason));
    else waiter.take(reply.returnvalue);
  }
}
