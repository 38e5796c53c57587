import { randomUUID } from "node:crypto";
import type { WebhookEvent } from "@mdp/webhooks";
import type { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { WEBHOOK_LIMITS, type WebhookDeliveryStatus, type WebhookSubscriptionRow } from "./webhook.types";

/**
 * Webhook deliveries (webhook_delivery) as the fan-out and the dispatcher write them: the fan-out's read of events and
 * its delivery rows with the pending bound, the claim, a delivery's read and each attempt's record.
 */

/** An event as the fan-out reads it: what matching, the reader's check and the body need (the body's own shape). */
export type WebhookEventRow = WebhookEvent;

/**
 * Up to `limit` sequenced events after `after`, in order, with their payloads: ordered by the int8 column, qualified
 * (the answer's `seq` is its text, and `ORDER BY seq` would sort by that: 10 before 9, skipping past what it passed).
 */
export async function webhookEventsAfter(db: Queryable, after: string, limit: number): Promise<WebhookEventRow[]> {
  const { rows } = await db.query<WebhookEventRow>(
    `SELECT id::text AS id, seq::text AS seq, event_type AS "eventType", entity_urn AS "entityUrn",
            entity_type AS "entityType", category, subject_actor AS "subjectActor", payload::text AS payload,
            (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt"
       FROM platform_event
      WHERE seq > $1::int8
      ORDER BY platform_event.seq
      LIMIT $2`,
    [after, Math.min(limit, 10_000)],
  );
  return rows;
}

export interface WebhookDeliveryInsert {
  subscriptionId: string;
  eventSeq: string;
  eventId: string;
  eventType: string;
  entityType: string;
  category: string | null;
  subjectActor: string | null;
  status: "PENDING" | "SKIPPED";
  error: string | null;
  body: string;
}

/**
 * Writes the fan-out's delivery rows (generation 0) in the caller's transaction; a row that exists already (a pass
 * done again) is left alone. Answers the ids of the PENDING rows written, each the id of its delivery job.
 */
export async function insertWebhookDeliveries(
  db: Queryable,
  rows: WebhookDeliveryInsert[],
  firstDelayMs = 0,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: written } = await db.query<{ id: string }>(
    `INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, status, error, body,
                                   entity_type, category, subject_actor, next_attempt_at)
     SELECT *, CASE WHEN s = 'PENDING' THEN now() + make_interval(secs => $12::float8 / 1000) END
       FROM unnest($1::uuid[], $2::uuid[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::text[], $10::text[], $11::text[]) AS r(i, sub, seq, eid, et, s, e, b, ent, c, sa)
     ON CONFLICT (subscription_id, event_seq, generation) DO NOTHING
     RETURNING id, status`,
    [
      rows.map(() => randomUUID()),
      rows.map((r) => r.subscriptionId),
      rows.map((r) => r.eventSeq),
      rows.map((r) => r.eventId),
      rows.map((r) => r.eventType),
      rows.map((r) => r.status),
      rows.map((r) => r.error),
      rows.map((r) => r.body),
      rows.map((r) => r.entityType),
      rows.map((r) => r.category),
      rows.map((r) => r.subjectActor),
      firstDelayMs,
    ],
  );
  return (written as Array<{ id: string; status: string }>).filter((r) => r.status === "PENDING").map((r) => r.id);
}

/** What a delivery needs: the row, and its subscription (with the secret a rotation replaced, while it signs). */
export interface WebhookDeliveryToSend {
  id: string;
  status: WebhookDeliveryStatus;
  eventId: string;
  eventType: string;
  eventSeq: string;
  entityType: string;
  category: string | null;
  subjectActor: string | null;
  body: string;
  attempts: number;
  /** epoch ms: when the delivery was written (its latency is counted from here) */
  createdAt: number;
  subscription: WebhookSubscriptionRow & {
    previousSecretSealed: string | null;
    /** as read with the row: no failures, circuit closed (a success then has nothing of the circuit to write) */
    healthy: boolean;
  };
}

export async function deliveryToSend(db: Queryable, id: string): Promise<WebhookDeliveryToSend | null> {
  const { rows } = await db.query<WebhookDeliveryToSend & { s: WebhookDeliveryToSend["subscription"] }>(
    `SELECT d.id, d.status, d.event_id AS "eventId", d.event_type AS "eventType", d.event_seq::text AS "eventSeq",
            d.entity_type AS "entityType", d.category, d.subject_actor AS "subjectActor", d.body, d.attempts,
            (extract(epoch FROM d.created_at) * 1000)::float8 AS "createdAt",
            json_build_object('id', s.id, 'ownerUrn', s.owner_urn, 'ownerTokenId', s.owner_token_id, 'url', s.url,
                              'eventTypes', s.event_types, 'categories', s.categories, 'entityUrn', s.entity_urn,
                              'actorUrn', s.actor_urn, 'testUrn', s.test_urn, 'active', s.active,
                              'secretSealed', s.secret_sealed,
                              'previousSecretSealed', CASE WHEN s.previous_secret_expires_at > now()
                                                           THEN s.previous_secret_sealed END,
                              'healthy', s.consecutive_failures = 0 AND s.circuit_state = 'CLOSED'
                                         AND s.failing_since IS NULL) AS s
       FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id
      WHERE d.id = $1::uuid`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const { s, ...delivery } = row;
  return { ...delivery, subscription: s };
}

/**
 * Records one attempt's outcome and lets go of the delivery's lease: `status` PENDING while retries remain, with its
 * next attempt `retryInMs` from now. Only a PENDING row changes. In the caller's transaction (with the circuit's).
 */
export async function recordWebhookAttempt(
  db: Queryable,
  id: string,
  outcome: {
    status: WebhookDeliveryStatus;
    responseStatus: number | null;
    durationMs: number | null;
    error: string | null;
    /** false: a skip decided before any request (no attempt counted) */
    attempted: boolean;
    /** PENDING: the next attempt's delay (ms) */
    retryInMs?: number;
  },
): Promise<void> {
  await db.query(
    `UPDATE webhook_delivery
        SET status = $2::text, response_status = $3::int, duration_ms = $4::int, error = $5::text,
            attempts = attempts + CASE WHEN $6::boolean THEN 1 ELSE 0 END, updated_at = now(), lease_until = NULL,
            next_attempt_at = CASE WHEN $2::text = 'PENDING' THEN now() + make_interval(secs => $7::float8 / 1000) END,
            delivered_at = CASE WHEN $2::text = 'DELIVERED' THEN now() ELSE delivered_at END
      WHERE id = $1::uuid AND status = 'PENDING'`,
    [
      id,
      outcome.status,
      outcome.responseStatus,
      outcome.durationMs,
      outcome.error?.slice(0, WEBHOOK_LIMITS.maxError) ?? null,
      outcome.attempted,
      outcome.retryInMs ?? 0,
    ],
  );
}

/** A subscription a claim chose: how many of its deliveries are held by workers now, and its circuit. */
export interface WebhookClaimCandidate {
  id: string;
  ownerUrn: string;
  circuitState: string;
  inFlight: number;
}

/**
 * The claim's first step (docs/webhooks.md "How delivery works"), in the caller's transaction: up to `limit` active
 * subscriptions, in random order, that have a delivery due and not held, and room for one more in flight (fewer than
 * `perSubscription` held; an open circuit: none held, and its probe due) — each locked (`FOR UPDATE SKIP LOCKED`),
 * so two workers never count one subscription's room at once, and a subscription another worker is claiming from is
 * passed over. A subscription at its bound is not read past its two index probes: it waits at no cost.
 */
export async function webhookClaimCandidates(
  db: Queryable,
  perSubscription: number,
  limit: number,
  /** owners the caller will not take more of now (at their share of its slots): their subscriptions are passed over */
  exceptOwners: readonly string[] = [],
): Promise<WebhookClaimCandidate[]> {
  const { rows } = await db.query<WebhookClaimCandidate>(
    `SELECT id, owner_urn AS "ownerUrn", circuit_state AS "circuitState", in_flight AS "inFlight"
       FROM (SELECT s.*, (SELECT count(*) FROM webhook_delivery l
                           WHERE l.subscription_id = s.id AND l.status = 'PENDING' AND l.lease_until IS NOT NULL
                         )::int AS in_flight
               FROM webhook_subscription s
              WHERE s.active AND (s.circuit_state = 'CLOSED' OR s.circuit_next_probe_at <= now())
                AND s.owner_urn <> ALL($3::text[])
                AND EXISTS (SELECT 1 FROM webhook_delivery d
                             WHERE d.subscription_id = s.id AND d.status = 'PENDING' AND d.lease_until IS NULL
                               AND d.next_attempt_at <= now())) c
      WHERE in_flight < CASE WHEN circuit_state = 'CLOSED' THEN $1::int ELSE 1 END
      ORDER BY random()
      LIMIT $2`,
    [perSubscription, Math.min(limit, 1_000), exceptOwners],
  );
  if (rows.length === 0) return [];
  // Locked, then counted again: a claim another worker committed since the choice's snapshot is seen by this one's
  // (the choice cannot lock: FOR UPDATE may not sit beside the aggregate it counts with).
  const { rows: locked } = await db.query<{ id: string; inFlight: number }>(
    `SELECT s.id, (SELECT count(*) FROM webhook_delivery l
                    WHERE l.subscription_id = s.id AND l.status = 'PENDING' AND l.lease_until IS NOT NULL)::int
                   AS "inFlight"
       FROM webhook_subscription s WHERE s.id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED`,
    [rows.map((r) => r.id)],
  );
  const held = new Map(locked.map((r) => [r.id, r.inFlight]));
  return rows.filter((r) => held.has(r.id)).map((r) => ({ ...r, inFlight: held.get(r.id)! }));
}

/**
 * The claim's second step: up to `count` of the subscription's due deliveries, earliest due first, held for
 * `leaseMs` (a worker that dies holding one lets it go when its lease ends). Answers their ids.
 */
export async function claimWebhookDeliveries(
  db: Queryable,
  subscriptionId: string,
  count: number,
  leaseMs: number,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE webhook_delivery SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
      WHERE id IN (SELECT id FROM webhook_delivery
                    WHERE subscription_id = $1::uuid AND status = 'PENDING' AND lease_until IS NULL
                      AND next_attempt_at <= now()
                    ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING id::text AS id`,
    [subscriptionId, Math.min(count, 1_000), leaseMs],
  );
  return rows.map((r) => r.id);
}

/**
 * The pending bound (WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION), in the caller's transaction after it wrote deliveries for
 * these subscriptions: each one's oldest PENDING deliveries (none held by a worker) past `max` end SKIPPED with the
 * reason, and are counted on the subscription. Answers how many went, and how many each subscription has pending
 * now (`onCounted`: the fan-out counts again only once its own writes may have taken one past the bound).
 */
export async function dropOverflowingDeliveries(
  db: Queryable | Prisma.TransactionClient,
  subscriptionIds: readonly string[],
  max: number,
  onCounted?: (subscriptionId: string, pending: number) => void,
): Promise<number> {
  if (subscriptionIds.length === 0) return 0;
  const ids = [...new Set(subscriptionIds)];
  const counted = await rowsOf<{ subscriptionId: string; pending: number }>(
    db,
    `SELECT s AS "subscriptionId",
            (SELECT count(*) FROM webhook_delivery WHERE subscription_id = s AND status = 'PENDING')::int AS pending
       FROM unnest($1::uuid[]) s`,
    [ids],
  );
  for (const c of counted) onCounted?.(c.subscriptionId, Math.min(c.pending, max));
  const overflowing = counted.filter((c) => c.pending > max).map((c) => c.subscriptionId);
  if (overflowing.length === 0) return 0;
  const rows = await rowsOf<{ subscriptionId: string; dropped: number }>(
    db,
    `WITH over AS (
       SELECT subscription_id, count(*) - $2::int AS excess FROM webhook_delivery
        WHERE subscription_id = ANY($1::uuid[]) AND status = 'PENDING'
        GROUP BY subscription_id HAVING count(*) > $2::int),
     victims AS (
       SELECT v.id FROM over CROSS JOIN LATERAL (
         SELECT id FROM webhook_delivery d
          WHERE d.subscription_id = over.subscription_id AND d.status = 'PENDING' AND d.lease_until IS NULL
          ORDER BY created_at, event_seq, generation LIMIT over.excess FOR UPDATE SKIP LOCKED) v),
     dropped AS (
       UPDATE webhook_delivery d
          SET status = 'SKIPPED', next_attempt_at = NULL, updated_at = now(),
              error = $3::text
         FROM victims WHERE d.id = victims.id
       RETURNING d.subscription_id)
     SELECT subscription_id::text AS "subscriptionId", count(*)::int AS dropped FROM dropped GROUP BY 1`,
    [
      overflowing,
      max,
      `dropped unsent: more than ${max} deliveries of this subscription were pending ` +
        `(WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION); the oldest go first`,
    ],
  );
  if (rows.length === 0) return 0;
  await rowsOf(
    db,
    `UPDATE webhook_subscription s SET dropped_deliveries = dropped_deliveries + d.n
       FROM unnest($1::uuid[], $2::int[]) AS d(id, n) WHERE s.id = d.id`,
    [rows.map((r) => r.subscriptionId), rows.map((r) => r.dropped)],
  );
  return rows.reduce((n, r) => n + r.dropped, 0);
}

/** A statement's rows on a pg client or pool, or in a Prisma transaction (the gateway's writes). */
async function rowsOf<T>(db: Queryable | Prisma.TransactionClient, sql: string, params: unknown[]): Promise<T[]> {
  if ("$queryRawUnsafe" in db) return db.$queryRawUnsafe<T[]>(sql, ...params);
  return (await db.query(sql, params)).rows as T[];
}
