import type { Redis } from "ioredis";
import type { Logger } from "@mdp/core";

/** What one gateway tells the others so their caches stay honest. */
export type Invalidation = { kind: "token-revoked"; tokenId: string } | { kind: "policies-changed" };

type Handler = (event: Invalidation) => void;

/**
 * Cross-replica cache invalidation over Redis pub/sub. Messages can be lost while a subscriber is disconnected, so
 * every (re)subscription also tells the handlers to drop everything they cache ("reset").
 */
export class InvalidationBus {
  private readonly handlers: Handler[] = [];
  private readonly resetHandlers: Array<() => void> = [];

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string, message: string) => {
      if (channel !== this.channel) return;
      try {
        const event = JSON.parse(message) as Invalidation;
        for (const handler of this.handlers) handler(event);
      } catch (error) {
        this.logger.warn({ err: error }, "ignoring a malformed invalidation message");
      }
    });
    // ioredis re-subscribes by itself after a reconnect; anything published meanwhile was missed.
    this.subscriber.on("ready", () => this.resetAll());
    await this.subscriber.subscribe(this.channel);
  }

  onInvalidation(handler: Handler): void {
    this.handlers.push(handler);
  }

  onReset(handler: () => void): void {
    this.resetHandlers.push(handler);
  }

  /** Tells every replica, this one included (it is subscribed too). */
  async publish(event: Invalidation): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify(event));
  }

  private resetAll(): void {
    for (const handler of this.resetHandlers) handler();
  }
}
