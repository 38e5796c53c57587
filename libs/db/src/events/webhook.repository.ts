import { randomUUID } from "node:crypto";
import { conflict, type WebhookEvent } from "@mdp/core";
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * Webhooks (docs/webhooks.md): subscriptions (webhook_subscription) and the delivery log (webhook_delivery), whose
 * rows the evaluation workers' fan-out writes in the transaction that moves the `webhooks` cursor of the platform-event
 * outbox, and whose delivery jobs update as they try.
 */

/** The outbox consumer that fans events out to subscriptions (platform_event_cursor). */
export const WEBHOOK_CONSUMER = "webhooks";

export const WEBHOOK_LIMITS = {
  /** longest url (bytes, ASCII once parsed) */
  maxUrlLength: 2048,
  maxDescription: 512,
  /** the longest error text kept per delivery */
  maxError: 512,
  /** rows one replay re-sends */
  maxReplay: 1000,
  /**
   * replayed deliveries one subscription may have PENDING at once: replays past it are refused until they are sent,
   * so calling replay in a loop cannot pile up rows and jobs without end (each carries its body) in everyone's queue
   */
  maxPendingReplays: 1000,
  /** rows one listing answers */
  maxPage: 500,
  /** rows one prune statement deletes */
  pruneBatch: 10_000,
} as const;

export type WebhookDeliveryStatus = "PENDING" | "DELIVERED" | "FAILED" | "SKIPPED";

export interface WebhookSubscriptionRow {
  id: string;
  ownerUrn: string;
  ownerTokenId: string | null;
  url: string;
  eventTypes: string[];
  categories: string[];
  entityUrn: string | null;
  actorUrn: string | null;
  testUrn: string | null;
  description: string | null;
  active: boolean;
  disabledReason: string | null;
  secretSealed: string;
  createdAt: Date;
  updatedAt: Date;
}

export type WebhookSubscriptionInsert = Omit<WebhookSubscriptionRow, "createdAt" | "updatedAt" | "disabledReason">;

/** Serializes, per owner, the creations that count against MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER (first statement). */
export async function lockWebhookOwner(tx: Prisma.TransactionClient, ownerUrn: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`webhook-owner:${ownerUrn}`}))`;
}

/** Refuses (409 naming the limit and its setting) one more subscription than `max` for `ownerUrn`. */
export async function requireWebhookRoom(tx: Prisma.TransactionClient, ownerUrn: string, max: number): Promise<void> {
  const owned = await tx.webhookSubscription.count({ where: { ownerUrn } });
  if (owned >= max) {
    throw conflict(
      `${ownerUrn} already owns ${owned} webhook subscriptions, the limit of ${max} ` +
        `(MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER); delete one first.`,
    );
  }
}

export async function insertWebhookSubscription(
  tx: Prisma.TransactionClient,
  row: WebhookSubscriptionInsert,
): Promise<WebhookSubscriptionRow> {
  return tx.webhookSubscription.create({ data: row });
}

export async function findWebhookSubscription(
  prisma: Pick<PrismaClient, "webhookSubscription"> | Prisma.TransactionClient,
  id: string,
): Promise<WebhookSubscriptionRow | null> {
  return prisma.webhookSubscription.findUnique({ where: { id } });
}

/** Subscriptions, newest first: one owner's, or everyone's (ownerUrn null). */
export async function listWebhookSubscriptions(
  prisma: Pick<PrismaClient, "webhookSubscription">,
  ownerUrn: string | null,
  page: { start: number; count: number },
): Promise<{ total: number; rows: WebhookSubscriptionRow[] }> {
  const where = ownerUrn === null ? {} : { ownerUrn };
  const [total, rows] = await Promise.all([
    prisma.webhookSubscription.count({ where }),
    prisma.webhookSubscription.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip: page.start,
      take: Math.min(page.count, WEBHOOK_LIMITS.maxPage),
    }),
  ]);
  return { total, rows };
}

export async function updateWebhookSubscription(
  tx: Prisma.TransactionClient,
  id: string,
  data: Partial<
    Pick<
      WebhookSubscriptionRow,
      "url" | "eventTypes" | "categories" | "entityUrn" | "actorUrn" | "testUrn" | "description" | "active"
    > & { disabledReason: string | null; ownerTokenId: string | null }
  >,
): Promise<WebhookSubscriptionRow> {
  return tx.webhookSubscription.update({ where: { id }, data });
}

/** Deletes the subscription and its delivery log (cascade); answers whether it existed. */
export async function deleteWebhookSubscription(tx: Prisma.TransactionClient, id: string): Promise<boolean> {
  const { count } = await tx.webhookSubscription.deleteMany({ where: { id } });
  return count > 0;
}

/** revokeActorAccess: the user's active subscriptions stop delivering (turned off, with the reason); their ids. */
export async function disableWebhookSubscriptionsOf(
  tx: Prisma.TransactionClient,
  ownerUrn: string,
  reason: string,
): Promise<string[]> {
  const rows = await tx.webhookSubscription.findMany({ where: { ownerUrn, active: true }, select: { id: true } });
  return disable(tx, rows, reason);
}

/**
 * revokeActorAccess of a minter: the active subscriptions another user (a service account) set through a token this
 * user minted stop delivering too, whether that token is still live or not. Whoever held the token chose their urls
 * and filters, and revokeActorAccess treats what the minter handed out as no longer trusted. Their ids.
 */
export async function disableWebhookSubscriptionsSetThroughTokensMintedBy(
  tx: Prisma.TransactionClient,
  minterUrn: string,
  reason: string,
): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT s.id::text AS id
      FROM webhook_subscription s JOIN access_token t ON t.id::text = s.owner_token_id
     WHERE s.active AND t.owner_urn = ${minterUrn} AND s.owner_urn <> ${minterUrn}`;
  return disable(tx, rows, reason);
}

async function disable(tx: Prisma.TransactionClient, rows: Array<{ id: string }>, reason: string): Promise<string[]> {
  if (rows.length === 0) return [];
  await tx.webhookSubscription.updateMany({
    where: { id: { in: rows.map((r) => r.id) } },
    data: { active: false, disabledReason: reason.slice(0, WEBHOOK_LIMITS.maxDescription) },
  });
  return rows.map((r) => r.id);
}

/** An event as the fan-out reads it: what matching, the reader's check and the body need (the body's own shape). */
export type WebhookEventRow = WebhookEvent;

/** Up to `limit` sequenced events after `after`, in order, with their payloads. */
export async function webhookEventsAfter(db: Queryable, after: string, limit: number): Promise<WebhookEventRow[]> {
  const { rows } = await db.query<WebhookEventRow>(
    `SELECT id::text AS id, seq::text AS seq, event_type AS "eventType", entity_urn AS "entityUrn",
            entity_type AS "entityType", category, subject_actor AS "subjectActor", payload::text AS payload,
            (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt"
       FROM platform_event
      WHERE seq > $1::int8
      ORDER BY seq
      LIMIT $2`,
    [after, Math.min(limit, 10_000)],
  );
  return rows;
}

/** The subscriptions that deliver (active), as the fan-out matches them. */
export async function activeWebhookSubscriptions(db: Queryable): Promise<WebhookSubscriptionRow[]> {
  const { rows } = await db.query<WebhookSubscriptionRow>(
    `SELECT id, owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", url, event_types AS "eventTypes",
            categories, entity_urn AS "entityUrn", actor_urn AS "actorUrn", test_urn AS "testUrn", description,
            active, disabled_reason AS "disabledReason", secret_sealed AS "secretSealed",
            created_at AS "createdAt", updated_at AS "updatedAt"
       FROM webhook_subscription WHERE active`,
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
export async function insertWebhookDeliveries(db: Queryable, rows: WebhookDeliveryInsert[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: written } = await db.query<{ id: string }>(
    `INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, status, error, body,
                                   entity_type, category, subject_actor)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                          $9::text[], $10::text[], $11::text[])
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
    ],
  );
  return (written as Array<{ id: string; status: string }>).filter((r) => r.status === "PENDING").map((r) => r.id);
}

/** What a delivery job needs: the row, and its subscription. */
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
  subscription: WebhookSubscriptionRow;
}

export async function deliveryToSend(db: Queryable, id: string): Promise<WebhookDeliveryToSend | null> {
  const { rows } = await db.query<WebhookDeliveryToSend & { s: WebhookSubscriptionRow }>(
    `SELECT d.id, d.status, d.event_id AS "eventId", d.event_type AS "eventType", d.event_seq::text AS "eventSeq",
            d.entity_type AS "entityType", d.category, d.subject_actor AS "subjectActor", d.body, d.attempts,
            json_build_object('id', s.id, 'ownerUrn', s.owner_urn, 'ownerTokenId', s.owner_token_id, 'url', s.url,
                              'eventTypes', s.event_types, 'categories', s.categories, 'entityUrn', s.entity_urn,
                              'actorUrn', s.actor_urn, 'testUrn', s.test_urn, 'active', s.active,
                              'secretSealed', s.secret_sealed) AS s
       FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id
      WHERE d.id = $1::uuid`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const { s, ...delivery } = row;
  return { ...delivery, subscription: s };
}

/** Records one attempt's outcome; `status` PENDING while retries remain. Only a PENDING row changes. */
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
  },
): Promise<void> {
  await db.query(
    `UPDATE webhook_delivery
        SET status = $2::text, response_status = $3::int, duration_ms = $4::int, error = $5::text,
            attempts = attempts + CASE WHEN $6::boolean THEN 1 ELSE 0 END, updated_at = now(),
            delivered_at = CASE WHEN $2::text = 'DELIVERED' THEN now() ELSE delivered_at END
      WHERE id = $1::uuid AND status = 'PENDING'`,
    [
      id,
      outcome.status,
      outcome.responseStatus,
      outcome.durationMs,
      outcome.error?.slice(0, WEBHOOK_LIMITS.maxError) ?? null,
      outcome.attempted,
    ],
  );
}

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
}

const DELIVERY_COLUMNS = `id, subscription_id AS "subscriptionId", event_seq::text AS "eventSeq", event_id AS "eventId",
  event_type AS "eventType", generation, status, attempts, response_status AS "responseStatus",
  duration_ms AS "durationMs", error, (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt",
  (extract(epoch FROM updated_at) * 1000)::float8 AS "updatedAt",
  (extract(epoch FROM delivered_at) * 1000)::float8 AS "deliveredAt"`;

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
                                  entity_type, category, subject_actor)
    SELECT gen_random_uuid(), ${subscriptionId}::uuid, c.event_seq, c.event_id, c.event_type,
           (SELECT max(generation) + 1 FROM webhook_delivery m
             WHERE m.subscription_id = ${subscriptionId}::uuid AND m.event_seq = c.event_seq),
           'PENDING', c.body, c.entity_type, c.category, c.subject_actor
      FROM chosen c
    RETURNING id::text AS id`;
  return { ids: rows.map((r) => r.id), pendingReplays: pending };
}

/** Deliveries still PENDING whose row has not changed for `idleMs`: the reconcile checks each has a job. */
export async function stalePendingDeliveries(db: Queryable, idleMs: number, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text AS id FROM webhook_delivery
      WHERE status = 'PENDING' AND updated_at < now() - make_interval(secs => $1::float8 / 1000)
      ORDER BY updated_at LIMIT $2`,
    [idleMs, limit],
  );
  return rows.map((r) => r.id);
}

/** Marks a PENDING delivery as touched (a reconcile that found or requeued its job) so the next looks later. */
export async function touchWebhookDelivery(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE webhook_delivery SET updated_at = now() WHERE id = $1::uuid AND status = 'PENDING'`, [id]);
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
