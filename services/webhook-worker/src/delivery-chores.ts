/** The delivery log's chores: leases of dead workers let go, and retention. */
import { pruneWebhookDeliveries, settleWebhookDeliveries } from "@mdp/db";
import { pruneInBatches } from "@mdp/core";
import type pg from "pg";

export const WEBHOOK_SETTLE_EVERY_MS = 15_000;
export const WEBHOOK_PRUNE_EVERY_MS = 60_000;

/** The settle chore (settleWebhookDeliveries): expired leases let go, turned-off subscriptions' deliveries skipped. */
export async function settleWebhookDeliveriesFully(pool: pg.Pool, budgetMs = 10_000): Promise<Record<string, number>> {
  const total = { released: 0, skipped: 0 };
  await pruneInBatches(
    async (batch) => {
      const { released, skipped } = await settleWebhookDeliveries(pool, batch);
      total.released += released;
      total.skipped += skipped;
      return Math.max(released, skipped); // caught up once both are short
    },
    { budgetMs, batch: 1_000 },
  );
  return total;
}

/** The delivery log's retention: rows older than WEBHOOK_DELIVERY_RETENTION_DAYS, once no longer pending. */
export async function pruneWebhookDeliveriesFully(pool: pg.Pool, days: number, budgetMs = 20_000): Promise<number> {
  return pruneInBatches((batch) => pruneWebhookDeliveries(pool, days, batch), { budgetMs, batch: 10_000 });
}
