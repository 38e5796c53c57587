import type { Queryable } from "../timeseries/timeseries.store";
import { WEBHOOK_LIMITS } from "./webhook.types";

/** The webhook worker's chores on webhook_delivery: the settle, the metrics' gauges, the prune (retention). */

/**
 * The settle chore: deliveries held past their lease (their worker died mid-POST) are let go, to be claimed again;
 * the pending deliveries of turned-off subscriptions end SKIPPED (never sent). At most `limit` of each per call.
 */
export async function settleWebhookDeliveries(
  db: Queryable,
  limit: number,
): Promise<{ released: number; skipped: number }> {
  const released = await db.query(
    `UPDATE webhook_delivery SET lease_until = NULL
      WHERE id IN (SELECT id FROM webhook_delivery
                    WHERE status = 'PENDING' AND lease_until IS NOT NULL AND lease_until < now() LIMIT $1)`,
    [limit],
  );
  const skipped = await db.query(
    `UPDATE webhook_delivery SET status = 'SKIPPED', next_attempt_at = NULL, updated_at = now(),
            error = 'its subscription was turned off'
      WHERE id IN (SELECT d.id FROM webhook_subscription s
                     JOIN webhook_delivery d ON d.subscription_id = s.id AND d.status = 'PENDING'
                                            AND d.lease_until IS NULL
                    WHERE NOT s.active LIMIT $1)`,
    [limit],
  );
  return { released: released.rowCount ?? 0, skipped: skipped.rowCount ?? 0 };
}

/** The metrics' gauges: pending deliveries by state (due, scheduled, in_flight, paused) and open circuits. */
export async function webhookDeliveryGauges(
  db: Queryable,
): Promise<{ pending: Record<"due" | "scheduled" | "in_flight" | "paused", number>; openCircuits: number }> {
  const { rows } = await db.query<{ state: string; n: number }>(
    `SELECT CASE WHEN d.lease_until IS NOT NULL THEN 'in_flight'
                 WHEN s.circuit_state <> 'CLOSED' OR NOT s.active THEN 'paused'
                 WHEN d.next_attempt_at <= now() THEN 'due' ELSE 'scheduled' END AS state, count(*)::int AS n
       FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id
      WHERE d.status = 'PENDING' GROUP BY 1
     UNION ALL
     SELECT 'open_circuits', count(*)::int FROM webhook_subscription WHERE active AND circuit_state <> 'CLOSED'`,
  );
  const pending = { due: 0, scheduled: 0, in_flight: 0, paused: 0 };
  let openCircuits = 0;
  for (const r of rows) {
    if (r.state === "open_circuits") openCircuits = r.n;
    else pending[r.state as keyof typeof pending] = r.n;
  }
  return { pending, openCircuits };
}

/** Deletes up to `limit` delivery rows older than `days` that are no longer pending; answers how many went. */
export async function pruneWebhookDeliveries(db: Queryable, days: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_delivery WHERE id IN (
       SELECT id FROM webhook_delivery
        WHERE created_at < now() - make_interval(days => $1) AND status <> 'PENDING'
        LIMIT $2)`,
    [days, Math.min(limit, WEBHOOK_LIMITS.pruneBatch)],
  );
  return rowCount ?? 0;
}
