import { randomUUID } from "node:crypto";
import type { RedisConnection } from "@mdp/queues";
import { every, withTimeout, type Logger, type PeriodicLoop } from "@mdp/core";

/** What one gateway tells the others so their caches stay honest. */
export type Invalidation =
  | { kind: "token-revoked"; tokenId: string }
  /** every token of one user (revokeAccessTokens): one message however many tokens it revoked */
  | { kind: "actor-tokens-revoked"; actorUrn: string }
  | { kind: "policies-changed" };

/** Everything on the channel: invalidations, and the heartbeats that say the channel still delivers them. */
type Message = Invalidation | { kind: "heartbeat"; replica: string } | { kind: "leaving"; replica: string };

type Handler = (event: Invalidation) => void;

/** How often each replica publishes a heartbeat on the channel. */
export const HEARTBEAT_INTERVAL_MS = 100;
/**
 * The channel counts as live while this replica's own heartbeat, and every known peer's, arrived within this long.
 * With the interval above, a stalled or lost channel is noticed within 0.5 s, so a revocation it failed to carry is
 * enforced (from PostgreSQL) within 1 s.
 */
export const LIVENESS_WINDOW_MS = 500;
/**
 * A peer silent this long without saying it was leaving is taken to have died and is forgotten; until then its
 * silence keeps every replica off its caches (it may have revoked a token it could not announce).
 */
export const PEER_FORGET_MS = 30_000;
/** The longest a publish may hold its caller (a revocation is already committed; publishing is best effort). */
export const PUBLISH_TIMEOUT_MS = 250;

/**
 * Cross-replica cache invalidation over Redis pub/sub, and the judge of whether caches may be trusted.
 *
 * Pub/sub loses messages silently while Redis is stalled (CLIENT PAUSE), disconnected or partitioned from a peer, so
 * a cache may be read only while the channel is known to deliver: `isLive()` is true while this replica keeps
 * receiving its own heartbeats and those of every peer it knows, each within LIVENESS_WINDOW_MS. While it is false,
 * the caches are bypassed (their owners read PostgreSQL, the source of truth); when it turns true again, or the
 * subscriber reconnects, every handler is told to drop what it holds ("reset"), since messages sent meanwhile may be
 * lost. Publishing never waits on Redis longer than PUBLISH_TIMEOUT_MS and never throws.
 */
export class InvalidationBus {
  private readonly handlers: Handler[] = [];
  private readonly resetHandlers: Array<() => void> = [];
  /** this replica's name on the channel */
  private readonly replica = randomUUID();
  /** when this replica last received its own heartbeat */
  private ownHeardAt = Number.NEGATIVE_INFINITY;
  /** other replicas → when their last heartbeat arrived */
  private readonly peers = new Map<string, number>();
  private live = false;
  /** whether it was ever live: its first time is the start, not a recovery */
  private wasLive = false;
  private heartbeatInFlight = false;
  private loop: PeriodicLoop | undefined;

  constructor(
    private readonly publisher: RedisConnection,
    private readonly subscriber: RedisConnection,
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string, text: string) => {
      if (channel !== this.channel) return;
      let message: Message;
      try {
        message = JSON.parse(text) as Message;
      } catch (error) {
        this.logger.warn({ err: error }, "ignoring a malformed invalidation message");
        return;
      }
      this.receive(message);
    });
    // ioredis re-subscribes by itself after a reconnect; anything published meanwhile was missed.
    this.subscriber.on("ready", () => this.resetAll());
    await this.subscriber.subscribe(this.channel);
    // Synchronous on purpose: the liveness check must go on every interval while a heartbeat is stuck on Redis.
    this.loop = every(
      "invalidation-heartbeat",
      HEARTBEAT_INTERVAL_MS,
      () => {
        this.heartbeat();
        this.isLive(); // notices a stall even when no request asks
      },
      { logger: this.logger, runAtStart: true },
    );
  }

  /** Says goodbye, so peers do not take this replica's silence for a lost channel. */
  async stop(): Promise<void> {
    await this.loop?.stop();
    await this.send({ kind: "leaving", replica: this.replica });
  }

  onInvalidation(handler: Handler): void {
    this.handlers.push(handler);
  }

  onReset(handler: () => void): void {
    this.resetHandlers.push(handler);
  }

  /**
   * Tells every replica. This one acts on it at once, before the message goes out (and again when its own copy comes
   * back: handlers only drop what they hold), so the request that made the change, and the next one here, never see
   * the cache from before it. Best effort and bounded: the change is already in PostgreSQL, and a replica that misses
   * this message stops trusting its caches within LIVENESS_WINDOW_MS.
   */
  async publish(event: Invalidation): Promise<void> {
    for (const handler of this.handlers) handler(event);
    await this.send(event);
  }

  /** Whether caches that rely on this channel may be read now. */
  isLive(): boolean {
    const now = Date.now();
    let live = now - this.ownHeardAt <= LIVENESS_WINDOW_MS;
    for (const [peer, heardAt] of this.peers) {
      const silentFor = now - heardAt;
      if (silentFor > PEER_FORGET_MS) this.peers.delete(peer);
      else if (silentFor > LIVENESS_WINDOW_MS) live = false;
    }
    if (live !== this.live) {
      this.live = live;
      if (live) this.logger.info(`invalidation channel live${this.wasLive ? " again" : ""}: caches in use`);
      else this.logger.warn("invalidation channel silent: caches bypassed, every check reads PostgreSQL");
      this.wasLive ||= live;
      // Going off: loads in flight must not cache what they read. Coming back: what was published meanwhile is lost.
      this.resetAll();
    }
    return live;
  }

  private receive(message: Message): void {
    if (message.kind === "heartbeat") {
      if (message.replica === this.replica) this.ownHeardAt = Date.now();
      else this.peers.set(message.replica, Date.now());
      return;
    }
    if (message.kind === "leaving") {
      this.peers.delete(message.replica);
      return;
    }
    for (const handler of this.handlers) handler(message);
  }

  /** One heartbeat at a time: while Redis stalls, they would otherwise pile up on the connection. */
  private heartbeat(): void {
    if (this.heartbeatInFlight) return;
    this.heartbeatInFlight = true;
    this.publisher
      .publish(this.channel, JSON.stringify({ kind: "heartbeat", replica: this.replica }))
      .catch(() => undefined) // the silence it leaves is what tells
      .finally(() => (this.heartbeatInFlight = false));
  }

  private async send(message: Message): Promise<void> {
    try {
      // A command already written still runs when a stall ends; only the caller stops waiting for it.
      await withTimeout(
        this.publisher.publish(this.channel, JSON.stringify(message)),
        PUBLISH_TIMEOUT_MS,
        () => new UnconfirmedPublish(`invalidation not confirmed by Redis within ${PUBLISH_TIMEOUT_MS} ms`),
      );
    } catch (error) {
      if (error instanceof UnconfirmedPublish) this.logger.warn({ kind: message.kind }, error.message);
      else this.logger.warn({ err: error, kind: message.kind }, "could not publish an invalidation");
    }
  }

  private resetAll(): void {
    for (const handler of this.resetHandlers) handler();
  }
}

/** A publish Redis did not confirm in time (it may still run once a stall ends). */
class UnconfirmedPublish extends Error {}
