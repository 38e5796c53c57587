import {
  canReadPlatformEvent,
  signWebhookBody,
  unsealWebhookSecret,
  WEBHOOK_HEADERS,
  webhookBody,
  webhookMatches,
  type Logger,
  type PeriodicLoop,
  type Privilege,
  type WebhookTargetPolicy,
} from "@mdp/core";
import {
  activeWebhookSubscriptions,
  advanceEventCursor,
  deliveryToSend,
  inTransaction,
  insertWebhookDeliveries,
  lockEventCursor,
  ownerKey,
  pruneWebhookDeliveries,
  recordWebhookAttempt,
  sequencePlatformEvents,
  stalePendingDeliveries,
  touchWebhookDelivery,
  WEBHOOK_CONSUMER,
  webhookEventsAfter,
  type OwnerPrivileges,
  type WebhookDeliveryInsert,
  type WebhookSubscriptionRow,
  type WorkOwner,
} from "@mdp/db";
import { webhookDeliveryOptions, type JobHandler, type Producer } from "@mdp/queues";
import { DelayedError, UnrecoverableError } from "bullmq";
import type pg from "pg";
import { postWebhook } from "./webhook-post";
import { outboxConsumerLoop, pruneUntilCaughtUp } from "../outbox-consumer";

export interface WebhookSettings {
  /** WEBHOOK_MAX_PAYLOAD_BYTES */
  maxPayloadBytes: number;
  /** events one fan-out pass reads */
  batchSize: number;
  /** WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_BASE_MS */
  maxAttempts: number;
  retryBaseMs: number;
  /** WEBHOOK_TIMEOUT_MS */
  timeoutMs: number;
  /** WEBHOOK_SUBSCRIPTION_CONCURRENCY */
  perSubscription: number;
  /** POSTs one owner's subscriptions may have in flight per process (webhookOwnerConcurrency) */
  perOwner: number;
  /** TOKEN_SIGNING_KEY: the secrets' sealing key is derived from it */
  serverSecret: string;
  policy: WebhookTargetPolicy;
}

const owner = (s: Pick<WebhookSubscriptionRow, "ownerUrn" | "ownerTokenId" | "active">): WorkOwner => ({
  urn: s.ownerUrn,
  tokenId: s.ownerTokenId,
  suspended: !s.active,
});

/** The reason logged for an event its subscription's owner may not read. */
export const UNREADABLE = "its owner may not read this event (canReadPlatformEvent, privileges read at delivery)";

/**
 * The outbox's `webhooks` consumer (docs/webhooks.md "How delivery works"): each pass, in one transaction, locks the
 * cursor (another worker holding it: nothing to do), reads the next events, writes one delivery row per event and
 * matching subscription whose owner may read it now (PENDING; none at all when it may not) — and moves the cursor;
 * then, after the commit, queues a job per PENDING row under the row's id. A job lost between the commit and Redis is queued
 * again by the reconcile chore; a pass done again writes no second row (one per subscription, event and generation).
 */
export class WebhookFanOut {
  constructor(
    private readonly pool: pg.Pool,
    private readonly ownerPrivileges: OwnerPrivileges,
    private readonly producer: Producer<"webhookDelivery">,
    private readonly settings: Pick<WebhookSettings, "maxPayloadBytes" | "batchSize" | "maxAttempts" | "retryBaseMs">,
  ) {}

  /** Passes until caught up (or `maxPasses`); answers the events read and the deliveries queued, null: cursor held. */
  async drain(maxPasses = 10): Promise<{ events: number; queued: number; skipped: number } | null> {
    const total = { events: 0, queued: 0, skipped: 0 };
    for (let i = 0; i < maxPasses; i++) {
      const pass = await this.pass();
      if (!pass) return i === 0 ? null : total;
      total.events += pass.events;
      total.queued += pass.queued;
      total.skipped += pass.skipped;
      if (pass.events < this.settings.batchSize) break;
    }
    return total;
  }

  async pass(): Promise<{ events: number; queued: number; skipped: number } | null> {
    await inTransaction(this.pool, (client) => sequencePlatformEvents(client, this.settings.batchSize));
    const written = await inTransaction(this.pool, async (client) => {
      const cursor = await lockEventCursor(client, WEBHOOK_CONSUMER);
      if (cursor === null) return null;
      const events = await webhookEventsAfter(client, cursor, this.settings.batchSize);
      if (events.length === 0) return { events: 0, pending: [] as string[], skipped: 0 };
      const subscriptions = await activeWebhookSubscriptions(client);
      const rows: WebhookDeliveryInsert[] = [];
      let unreadable = 0;
      const privileges = new Map<string, Promise<ReadonlySet<Privilege>>>();
      const privilegesOf = (s: WebhookSubscriptionRow) => {
        const key = ownerKey(owner(s));
        let read = privileges.get(key);
        if (!read) privileges.set(key, (read = this.ownerPrivileges(owner(s))));
        return read;
      };
      for (const read of subscriptions.length > 0 ? events : []) {
        // An event's id is its position in the stream: what listPlatformEvents calls it (seq), stable once given.
        const event = { ...read, id: read.seq };
        const parsed = parsePayload(event.payload);
        for (const s of subscriptions) {
          // Events from before the subscription was made are not its (a pass may read them after).
          if (event.createdAt < s.createdAt.getTime() || !webhookMatches(s, event, parsed)) continue;
          // An event the owner may not read leaves no trace in its log: a SKIPPED row would tell a subscriber with
          // an entityUrn/actorUrn/testUrn filter that (and when) something happened to what it may not read.
          if (!canReadPlatformEvent(event, { urn: s.ownerUrn, privileges: await privilegesOf(s) })) {
            unreadable++;
            continue;
          }
          rows.push({
            subscriptionId: s.id,
            eventSeq: event.seq,
            eventId: event.id,
            eventType: event.eventType,
            entityType: event.entityType,
            category: event.category,
            subjectActor: event.subjectActor,
            status: "PENDING",
            error: null,
            body: webhookBody(event, this.settings.maxPayloadBytes),
          });
        }
      }
      const pending = await insertWebhookDeliveries(client, rows);
      await advanceEventCursor(client, WEBHOOK_CONSUMER, events.at(-1)!.seq);
      return { events: events.length, pending, skipped: unreadable };
    });
    if (!written) return null;
    // After the commit: a job never names a row that might roll back. All in one round trip; if Redis refuses, the
    // reconcile queues what is missing (the rows are committed, the cursor has moved on).
    const options = webhookDeliveryOptions(this.settings.maxAttempts, this.settings.retryBaseMs);
    await this.producer.enqueueMany(
      written.pending.map((id) => ({ jobId: id, payload: { deliveryId: id } })),
      options,
    );
    return { events: written.events, queued: written.pending.length, skipped: written.skipped };
  }
}

function parsePayload(payload: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(payload);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** How long an owner's privileges read for a delivery serve the next ones of the process (ms). */
export const OWNER_PRIVILEGES_TTL_MS = 1_000;

/**
 * `read`, remembered per owner (and token, and suspension) for OWNER_PRIVILEGES_TTL_MS: at hundreds of deliveries a
 * second, reading the policies afresh for each was half the worker's work (bench/webhooks), while a second's
 * staleness is what the gateway's own cache allows between a policy's change and its invalidation reaching it.
 */
export function briefly(read: OwnerPrivileges, ttlMs = OWNER_PRIVILEGES_TTL_MS): OwnerPrivileges {
  const cache = new Map<string, { at: number; value: Promise<ReadonlySet<Privilege>> }>();
  return (who) => {
    const key = ownerKey(who);
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value;
    if (cache.size > 10_000) cache.clear();
    const value = read(who);
    cache.set(key, { at: now, value });
    value.catch(() => cache.delete(key));
    return value;
  };
}

/** How long a job waits before it asks again for a slot of its subscription (ms). */
const HAND_BACK_MS = 250;

/**
 * The delivery job (docs/webhooks.md): reads its row and subscription, checks again that the owner may read the event
 * now (else SKIPPED, never sent), signs and POSTs it, and records the attempt. A 2xx ends it DELIVERED; a 4xx other
 * than 408, 425 and 429, or a refused target, ends it FAILED at once (the same body will be refused again: replay it
 * once fixed); anything else is retried with BullMQ's exponential backoff until WEBHOOK_MAX_ATTEMPTS, then FAILED.
 * Each subscription has at most `perSubscription` POSTs in flight per process: past it, a job is handed back to the
 * queue for a moment, so a slow or hanging endpoint holds a few of the worker's slots, never all of them.
 */
export function webhookDeliveryHandler(
  pool: pg.Pool,
  ownerPrivileges: OwnerPrivileges,
  settings: Pick<WebhookSettings, "timeoutMs" | "perSubscription" | "perOwner" | "serverSecret" | "policy">,
  logger: Logger,
): JobHandler<"webhookDelivery"> {
  const inFlight = new Map<string, number>();
  // By owner too: a user's ten subscriptions at two each would otherwise hold every slot of a worker.
  const ownerInFlight = new Map<string, number>();
  const release = (map: Map<string, number>, key: string) => {
    const left = (map.get(key) ?? 1) - 1;
    if (left <= 0) map.delete(key);
    else map.set(key, left);
  };
  const privilegesOf = briefly(ownerPrivileges);
  return async ({ deliveryId }, job, token) => {
    const delivery = await deliveryToSend(pool, deliveryId);
    if (!delivery || delivery.status !== "PENDING") return { done: delivery?.status ?? "gone" };
    const s = delivery.subscription;
    if (!s.active) {
      await recordWebhookAttempt(pool, deliveryId, {
        status: "SKIPPED",
        responseStatus: null,
        durationMs: null,
        error: "its subscription was turned off",
        attempted: false,
      });
      return { done: "SKIPPED" };
    }
    const running = inFlight.get(s.id) ?? 0;
    const owners = ownerInFlight.get(s.ownerUrn) ?? 0;
    if (running >= settings.perSubscription || owners >= settings.perOwner) {
      await job.moveToDelayed(Date.now() + HAND_BACK_MS + Math.floor(Math.random() * HAND_BACK_MS), token);
      throw new DelayedError();
    }
    inFlight.set(s.id, running + 1);
    ownerInFlight.set(s.ownerUrn, owners + 1);
    try {
      const privileges = await privilegesOf(owner(s));
      if (!canReadPlatformEvent(delivery, { urn: s.ownerUrn, privileges })) {
        await recordWebhookAttempt(pool, deliveryId, {
          status: "SKIPPED",
          responseStatus: null,
          durationMs: null,
          error: UNREADABLE,
          attempted: false,
        });
        logger.info({ deliveryId, subscriptionId: s.id, eventId: delivery.eventId }, "webhook delivery skipped");
        return { done: "SKIPPED" };
      }
      const secret = unsealWebhookSecret(s.secretSealed, settings.serverSecret);
      const timestamp = Math.floor(Date.now() / 1000);
      const outcome = await postWebhook(
        s.url,
        {
          "content-type": "application/json",
          "user-agent": "mdp-webhooks/1",
          [WEBHOOK_HEADERS.eventId]: delivery.eventId,
          [WEBHOOK_HEADERS.deliveryId]: delivery.id,
          [WEBHOOK_HEADERS.eventType]: delivery.eventType,
          [WEBHOOK_HEADERS.timestamp]: String(timestamp),
          [WEBHOOK_HEADERS.signature]: signWebhookBody(secret, timestamp, delivery.body),
        },
        delivery.body,
        { timeoutMs: settings.timeoutMs, policy: settings.policy },
      );
      const ok = outcome.error === null;
      const permanent =
        outcome.refused ||
        (outcome.status !== null && outcome.status >= 400 && outcome.status < 500 && !RETRIED_4XX.has(outcome.status));
      const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      await recordWebhookAttempt(pool, deliveryId, {
        status: ok ? "DELIVERED" : permanent || last ? "FAILED" : "PENDING",
        responseStatus: outcome.status,
        durationMs: outcome.durationMs,
        error: outcome.error,
        attempted: true,
      });
      if (ok) return { done: "DELIVERED", status: outcome.status };
      if (permanent) throw new UnrecoverableError(outcome.error ?? "refused");
      throw new Error(outcome.error ?? "failed");
    } finally {
      release(inFlight, s.id);
      release(ownerInFlight, s.ownerUrn);
    }
  };
}

/** 4xx answers that are retried: the receiver's timeout, "too early", and its rate limit. */
const RETRIED_4XX = new Set([408, 425, 429]);

/** A PENDING delivery whose row has not changed for this long is checked for its job (ms). */
export const WEBHOOK_RECONCILE_IDLE_MS = 30_000;
export const WEBHOOK_RECONCILE_EVERY_MS = 15_000;
export const WEBHOOK_PRUNE_EVERY_MS = 60_000;

/**
 * The reconcile chore: a PENDING delivery idle for WEBHOOK_RECONCILE_IDLE_MS whose job is gone from Redis (its
 * enqueue lost after the fan-out committed, Redis flushed) is queued again under its id; one whose job BullMQ failed
 * without running it (stalled too often) ends FAILED. Answers how many it requeued.
 */
export async function reconcileWebhookDeliveries(
  pool: pg.Pool,
  producer: Producer<"webhookDelivery">,
  settings: Pick<WebhookSettings, "maxAttempts" | "retryBaseMs">,
  idleMs = WEBHOOK_RECONCILE_IDLE_MS,
): Promise<{ requeued: number; failed: number }> {
  const ids = await stalePendingDeliveries(pool, idleMs, 1_000);
  let requeued = 0;
  let failed = 0;
  for (const id of ids) {
    const job = await producer.queue.getJob(id);
    if (!job) {
      await producer.enqueue(
        id,
        { deliveryId: id },
        webhookDeliveryOptions(settings.maxAttempts, settings.retryBaseMs),
      );
      requeued++;
    } else if (await job.isFailed()) {
      await recordWebhookAttempt(pool, id, {
        status: "FAILED",
        responseStatus: null,
        durationMs: null,
        error: job.failedReason || "its job failed",
        attempted: false,
      });
      failed++;
      continue;
    }
    await touchWebhookDelivery(pool, id);
  }
  return { requeued, failed };
}

/** The delivery log's retention: rows older than WEBHOOK_DELIVERY_RETENTION_DAYS, once no longer pending. */
export async function pruneWebhookDeliveriesFully(pool: pg.Pool, days: number, budgetMs = 20_000): Promise<number> {
  return pruneUntilCaughtUp((batch) => pruneWebhookDeliveries(pool, days, batch), budgetMs);
}

/** Each worker's share of the fan-out (outboxConsumerLoop). */
export function webhookFanOutLoop(fanOut: WebhookFanOut, pollMs: number, logger: Logger): PeriodicLoop {
  return outboxConsumerLoop("webhook-fan-out", () => fanOut.drain(), pollMs, logger);
}
