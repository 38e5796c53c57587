import { randomUUID } from "node:crypto";
import type { RedisConnection } from "./connection";
import { shardOf, shardPrefixes } from "./shards";

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

/**
 * The connection the replies arrive on was lost (or is not subscribed again yet): replies published meanwhile are
 * gone. Thrown for a wait that could not start (its job is not queued), or ended by its owner (ReplyInbox.end) once
 * the job has ended without its reply arriving. The job may still run (and push) to its end.
 */
export class ReplyChannelLostError extends Error {
  constructor(readonly jobId: string) {
    super(`The reply channel of job ${jobId} was interrupted; its reply cannot arrive`);
    this.name = "ReplyChannelLostError";
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
 * The largest reply a worker publishes (UTF-8 bytes of its JSON). Redis buffers what a subscriber has not read yet and
 * drops the connection past its pub/sub output buffer limit (by default 32 MB at once, or 8 MB for a minute): an
 * 80 MB reply once dropped a gateway's subscriber, and every caller waiting on it waited for its timeout. Evaluation
 * results are capped below this (RESULT_LIMITS in @mdp/metadata-tests: 4 MiB per answer, replies split to match), so
 * only a bug reaches it; a reply past it is replaced by a failure naming the limit.
 */
export const REPLY_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Sends a job's reply to the channel its producer named in the payload (`replyTo`). Resolves to whether a process
 * was subscribed to receive it (false: the producer is gone or disconnected, and its callers will time out). A reply
 * over REPLY_MAX_BYTES is not sent: its waiter gets a failure naming the limit instead.
 */
export async function sendReply(redis: RedisConnection, channel: string, reply: JobReply): Promise<boolean> {
  let message = JSON.stringify(reply);
  if (message.length * 3 > REPLY_MAX_BYTES) {
    const bytes = Buffer.byteLength(message, "utf8");
    if (bytes > REPLY_MAX_BYTES) {
      message = JSON.stringify({
        jobId: reply.jobId,
        failedReason: `The worker's reply was ${bytes} bytes, more than the limit of ${REPLY_MAX_BYTES} (REPLY_MAX_BYTES); it was not sent.`,
      } satisfies JobReply);
    }
  }
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
  /** ends the wait as answered */
  finish: () => void;
  reject: (error: unknown) => void;
}

/**
 * Where one process receives the replies to the jobs it waits for: a Redis pub/sub channel of its own, named in each
 * job's payload, on which the worker publishes the job's outcome. BullMQ's QueueEvents would deliver every event of
 * the queue, every job's return value included, to every waiting process; with many gateways each would then parse
 * the whole cluster's results to find its own, so its cost would grow with the cluster rather than with its traffic.
 * Replies published while the subscriber is disconnected are lost: while it is, a new wait is refused at once with
 * ReplyChannelLostError (its job is not queued). The waits under way go on (their jobs may still reply once the
 * channel holds again, and a worker whose reply reached nobody keeps the answer elsewhere): the inbox counts each
 * loss (`losses`) and tells its `onTrouble` listeners, on a loss and on each reconnection, so that their owner can
 * look for the answers elsewhere and end a wait itself (`end`) rather than leave it to its timeout.
 *
 * The subscriber should be a connection of its own: a caller's reply, however large, must never make Redis drop the
 * connection that carries something else (the gateway's invalidations), nor share its output buffer.
 */
export class ReplyInbox {
  private readonly waiting = new Map<string, Waiter>();

  private unsubscribe: () => Promise<void> = async () => {};

  /** whether replies can arrive: the subscriber is connected and this channel subscribed on it */
  private subscribed = true;

  private readonly troubleListeners = new Set<() => void>();

  /**
   * How many times the reply connection (or, on a Redis Cluster, one of its node connections) was lost or failed:
   * a wait that began at a lower count may have lost its reply.
   */
  losses = 0;

  private constructor(
    /** one channel per shard of the queue, each under its shard's prefix (hence its hash tag) */
    readonly channels: readonly string[],
  ) {}

  /** the channel to name in payloads as `replyTo` (of an unsharded queue; a sharded one's: `channelFor`) */
  get channel(): string {
    return this.channels[0]!;
  }

  /**
   * The channel to name as `replyTo` in the job `jobId`: its shard's, so that on a Redis Cluster the reply (sharded
   * pub/sub, kept on the master of the channel's slot) goes to the master that holds the job, and the replies spread
   * over the masters with the jobs.
   */
  channelFor(jobId: string): string {
    return this.channels[shardOf(jobId, this.channels.length)]!;
  }

  /**
   * Subscribes on `subscriber`, a connection in subscriber mode: it can run no other command, though other
   * subscriptions may share it. `shards`: the queue's shards (QUEUE_SHARDS for a sharded queue), a channel each.
   */
  static async open(subscriber: RedisConnection, prefix: string, queueName: string, shards = 1): Promise<ReplyInbox> {
    const id = randomUUID();
    const inbox = new ReplyInbox(shardPrefixes(prefix, shards).map((p) => `${p}:${queueName}:replies:${id}`));
    const unsubscribes = await Promise.all(
      inbox.channels.map((channel) => subscribeToReplies(subscriber, channel, (message) => inbox.deliver(message))),
    );
    const unsubscribe = async () => {
      await Promise.all(unsubscribes.map((end) => end()));
    };
    const lost = () => inbox.lose();
    const faltered = () => inbox.falter();
    // ioredis subscribes again by itself once reconnected, but only after "ready"; subscribing here as well is how
    // this inbox learns when the channel holds again (a second SUBSCRIBE of a channel changes nothing).
    const ready = () => {
      const again = Promise.all(
        inbox.channels.map((channel) =>
          sharded(subscriber) ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel),
        ),
      );
      again.then(
        () => {
          inbox.subscribed = true;
          inbox.troubled(); // replies sent meanwhile are lost, but their answers may be kept elsewhere by now
        },
        () => undefined, // lost again: the next "ready" tries again
      );
    };
    // A Redis Cluster's subscriber keeps a connection per master (sharded pub/sub) and subscribes again by itself when
    // a master fails over: a node's connection ending or failing is a loss of whatever it was sent meanwhile, and a
    // subscriber that is connected again ("+subscriber", "subscribersReady") is worth looking again.
    const listeners: Array<[string, () => void]> = [
      ["close", lost],
      ["end", faltered],
      ["reconnecting", faltered],
      ["-node", faltered],
      ["nodeError", faltered],
      ["-subscriber", faltered],
      ["+subscriber", () => inbox.troubled()],
      ["subscribersReady", () => inbox.troubled()],
      ["ready", ready],
    ];
    for (const [event, listener] of listeners) subscriber.on(event, listener);
    inbox.unsubscribe = async () => {
      for (const [event, listener] of listeners) subscriber.off(event, listener);
      await unsubscribe();
    };
    return inbox;
  }

  /** The connection closed: no reply can arrive until it is subscribed again, so no new wait starts meanwhile. */
  private lose(): void {
    this.subscribed = false;
    this.falter();
  }

  /** Replies sent now may be lost. */
  private falter(): void {
    this.losses++;
    this.troubled();
  }

  private troubled(): void {
    for (const listener of this.troubleListeners) listener();
  }

  /**
   * Calls `listener` when the reply connection is lost or fails, and when it is subscribed again: the waits under way
   * may have lost their replies. Returns the function that stops it.
   */
  onTrouble(listener: () => void): () => void {
    this.troubleListeners.add(listener);
    return () => this.troubleListeners.delete(listener);
  }

  /**
   * Ends a wait from outside: resolved (its owner answered every part of it from elsewhere), or rejected with `error`.
   * A wait that is over already is left alone.
   */
  end(jobId: string, error?: unknown): void {
    const waiter = this.waiting.get(jobId);
    if (!waiter) return;
    if (error === undefined) waiter.finish();
    else waiter.reject(error);
  }

  /**
   * Adds a job (through `enqueue`, which must name this inbox's channel in it) and waits for its reply. The waiter is
   * in place before the job exists, so a fast reply cannot be missed. Rejects with JobWaitTimeoutError,
   * JobFailedError or ReplyChannelLostError, or with whatever `enqueue` threw.
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
   * when the job fails for good (the parts already taken stand), with ReplyChannelLostError when the subscriber is
   * disconnected (then, without queueing the job), with whatever `enqueue` or `take` threw, or as `end` says.
   */
  enqueueAndCollect(
    jobId: string,
    timeoutMs: number,
    enqueue: () => Promise<unknown>,
    take: (value: unknown) => boolean,
  ): Promise<void> {
    if (!this.subscribed) return Promise.reject(new ReplyChannelLostError(jobId));
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
        finish: () => settle(resolve),
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
