import { every, type Logger, type PeriodicLoop } from "@mdp/core";

/** What one pass of an outbox consumer did: how many events it read (0: nothing new). */
export interface OutboxPass {
  events: number;
}

/**
 * Each worker process's share of one consumer of the platform-event outbox (evaluation on change, the webhooks'
 * fan-out): a pass, drained until caught up, every `pollMs`; whichever worker holds the consumer's cursor does the work,
 * the others find it locked and wait for their next tick. A failing pass (the database or Redis away) is redone from
 * the same cursor after a wait that doubles up to 30 s, so an outage costs retries, not a storm of them.
 */
export function outboxConsumerLoop<P extends OutboxPass>(
  name: string,
  drain: () => Promise<P | null | undefined>,
  pollMs: number,
  logger: Logger,
): PeriodicLoop {
  let failures = 0;
  let retryAt = 0;
  return every(
    name,
    pollMs,
    async () => {
      if (Date.now() < retryAt) return;
      try {
        const done = await drain();
        failures = 0;
        return done && done.events > 0 ? ({ ...done } as Record<string, unknown>) : undefined;
      } catch (error) {
        failures++;
        retryAt = Date.now() + Math.min(30_000, pollMs * 2 ** Math.min(failures, 10));
        throw error;
      }
    },
    { logger },
  );
}

/**
 * A retention chore's deletes, in statements of at most `batch` rows until none is left, within a time budget rather
 * than a count of statements: a fixed count let a table written faster than it pruned grow for good.
 */
export async function pruneUntilCaughtUp(
  prune: (batch: number) => Promise<number>,
  budgetMs = 20_000,
  batch = 10_000,
): Promise<number> {
  const until = Date.now() + budgetMs;
  let deleted = 0;
  for (;;) {
    const n = await prune(batch);
    deleted += n;
    if (n < batch || Date.now() >= until) return deleted;
  }
}
