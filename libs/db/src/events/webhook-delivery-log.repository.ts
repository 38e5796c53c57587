import type { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { WEBHOOK_LIMITS, type WebhookDeliveryStatus } from "./webhook.types";

/** A subscription's delivery log (webhook_delivery) as the API reads it, and a replay of its rows. */

export interface WebhookDeliveryRow {
  id: string;
  subscriptionId: string;
  eventSeq: string;
  eventId: string;
  eventType: string;
  generation: number;
  status: WebhookDeliveryStatus;
  attempts: number;
  responseStatus: number | null;
  durationMs: number | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
  /** a PENDING delivery's next attempt (epoch ms): not before its subscription's open circuit lets a probe through */
  nextAttemptAt: number | null;
}

const DELIVERY_COLUMNS = `id, subscription_id AS "subscriptionId", event_seq::text AS "eventSeq", event_id AS "eventId",
  event_type AS "eventType", generation, status, attempts, response_status AS "responseStatus",
  duration_ms AS "durationMs", error, (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt",
  (extract(epoch FROM updated_at) * 1000)::float8 AS "updatedAt",
  (extract(epoch FROM delivered_at) * 1000)::float8 AS "deliveredAt",
  (extract(epoch FROM CASE WHEN status = 'PENDING' THEN CASE WHEN lease_until IS NOT NULL THEN now()
     ELSE greatest(next_attempt_at, (SELECT CASE WHEN s.circuit_state <> 'CLOSED' THEN s.circuit_next_probe_at END
                                       FROM webhook_subscription s WHERE s.id = subscription_id)) END END)
   * 1000)::float8 AS "nextAttemptAt"`;

/** A subscription's delivery log, newest first (optionally one status), paged. */
export async function listWebhookDeliveries(
  db: Queryable,
  subscriptionId: string,
  filter: { status: WebhookDeliveryStatus | null; start: number; count: number },
): Promise<{ total: number; rows: WebhookDeliveryRow[] }> {
  const [{ rows: counted }, { rows }] = await Promise.all([
    db.query<{ total: number }>(
      `SELECT count(*)::int AS total FROM webhook_delivery WHERE subscription_id = $1::uuid AND ($2::text IS NULL OR status = $2)`,
      [subscriptionId, filter.status],
    ),
    db.query<WebhookDeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_delivery
        WHERE subscription_id = $1::uuid AND ($2::text IS NULL OR status = $2)
        ORDER BY created_at DESC, event_seq DESC, generation DESC
        OFFSET $3 LIMIT $4`,
      [subscriptionId, filter.status, filter.start, Math.min(filter.count, WEBHOOK_LIMITS.maxPage)],
    ),
  ]);
  return { total: counted[0]?.total ?? 0, rows };
}

/**
 * A replay: each chosen delivery of the subscription (by id, or every one created at or after `since`; at most
 * `limit`, oldest first; one per event, its latest generation) is written again as a new PENDING row of the next
 * generation with the same event id and body, within WEBHOOK_LIMITS.maxPendingReplays replayed rows pending at once.
 * Answers the new rows' ids (their jobs' ids) and how many replays were pending before. In the caller's transaction,
 * with the subscription's row locked so two replays number their generations (and count what is pending) in turn.
 */
export async function replayWebhookDeliveries(
  tx: Prisma.TransactionClient,
  subscriptionId: string,
  choose: { deliveryIds: string[] | null; since: Date | null; limit: number },
): Promise<{ ids: string[]; pendingReplays: number }> {
  await tx.$queryRaw`SELECT id FROM webhook_subscription WHERE id = ${subscriptionId}::uuid FOR UPDATE`;
  // Under the lock: the replays of this subscription still waiting to be sent (bounded count).
  const [{ pending }] = (await tx.$queryRaw<Array<{ pending: number }>>`
    SELECT count(*)::int AS pending FROM (
      SELECT 1 FROM webhook_delivery
       WHERE subscription_id = ${subscriptionId}::uuid AND status = 'PENDING' AND generation > 0
       LIMIT ${WEBHOOK_LIMITS.maxPendingReplays}) p`) as [{ pending: number }];
  const limit = Math.min(choose.limit, WEBHOOK_LIMITS.maxReplay, WEBHOOK_LIMITS.maxPendingReplays - pending);
  if (limit <= 0) return { ids: [], pendingReplays: pending };
  const rows = await tx.$queryRaw<Array<{ id: string }>>`
    WITH chosen AS (
      SELECT DISTINCT ON (event_seq) event_seq, event_id, event_type, body, entity_type, category, subject_actor
        FROM webhook_delivery
       WHERE subscription_id = ${subscriptionId}::uuid
         AND (${choose.deliveryIds}::uuid[] IS NULL OR id = ANY(${choose.deliveryIds}::uuid[]))
         AND (${choose.since}::timestamptz IS NULL OR created_at >= ${choose.since}::timestamptz)
       ORDER BY event_seq, generation DESC
       LIMIT ${limit}
    )
    INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, generation, status, body,
                                  entity_type, category, subject_actor, next_attempt_at)
    SELECT gen_random_uuid(), ${subscriptionId}::uuid, c.event_seq, c.event_id, c.event_type,
           (SELECT max(generation) + 1 FROM webhook_delivery m
             WHERE m.subscription_id = ${subscriptionId}::uuid AND m.event_seq = c.event_seq),
           'PENDING', c.body, c.entity_type, c.category, c.subject_actor, now()
      FROM chosen c
    RETURNING id::text AS id`;
  return { ids: rows.map((r) => r.id), pendingReplays: pending };
}
