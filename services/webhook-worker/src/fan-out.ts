import { canReadPlatformEvent, outboxConsumerLoop, type Logger, type PeriodicLoop, type Privilege } from "@mdp/core";
import { webhookBody, webhookMatches } from "@mdp/webhooks";
import {
  activeWebhookSubscriptions,
  advanceEventCursor,
  dropOverflowingDeliveries,
  inTransaction,
  insertWebhookDeliveries,
  lockEventCursor,
  ownerKey,
  sequencePlatformEvents,
  WEBHOOK_CONSUMER,
  webhookEventsAfter,
  type OwnerPrivileges,
  type WebhookDeliveryInsert,
  type WebhookSubscriptionRow,
} from "@mdp/db";
import { countWebhookOutcome } from "./webhook-metrics";
import { subscriptionOwner, type WebhookSettings } from "./settings";
import type pg from "pg";

/**
 * How old a subscription's count of pending deliveries may be before the fan-out counts again: what other processes
 * wrote meanwhile (another worker's fan-out, a replay) takes it past the bound for at most about this long.
 */
export const PENDING_RECOUNT_MS = 10_000;

/** What a fan-out pass did: events read, deliveries written, events its owners may not read, deliveries dropped. */
export interface FanOutPass {
  events: number;
  queued: number;
  skipped: number;
  dropped: number;
}

/**
 * The outbox's `webhooks` consumer (docs/webhooks.md "How delivery works"): each pass, in one transaction, locks the
 * cursor (another worker holding it: nothing to do), reads the next events, writes one delivery row per event and
 * matching subscription whose owner may read it now (PENDING, its first attempt due at once: none at all when it may
 * not), drops what passes a subscription's pending bound — and moves the cursor; the dispatcher claims the rows from
 * there. A pass done again writes no second row (one per subscription, event and generation).
 */
export class WebhookFanOut {
  constructor(
    private readonly pool: pg.Pool,
    private readonly ownerPrivileges: OwnerPrivileges,
    private readonly settings: Pick<
      WebhookSettings,
      "maxPayloadBytes" | "batchSize" | "retrySchedule" | "maxPendingPerSubscription"
    >,
    /** told after a pass committed deliveries: the process's dispatcher claims them at once */
    private readonly onQueued: () => void = () => undefined,
  ) {}

  /**
   * Per subscription, its pending deliveries when last counted plus those this process wrote since: never fewer than
   * it has unless another process wrote some too, so a count, which reads every pending row of the subscription, is
   * made only when this estimate passes the bound or is PENDING_RECOUNT_MS old (another worker's fan-out, a replay).
   */
  private readonly pendingEstimate = new Map<string, { pending: number; at: number }>();

  /** The subscriptions whose pending deliveries this pass's rows may have taken past the bound: to be counted. */
  private mayOverflow(rows: readonly WebhookDeliveryInsert[]): string[] {
    const written = new Map<string, number>();
    for (const r of rows) written.set(r.subscriptionId, (written.get(r.subscriptionId) ?? 0) + 1);
    if (this.pendingEstimate.size > 100_000) this.pendingEstimate.clear();
    const now = Date.now();
    const count: string[] = [];
    for (const [id, n] of written) {
      const known = this.pendingEstimate.get(id);
      if (
        !known ||
        now - known.at > PENDING_RECOUNT_MS ||
        known.pending + n > this.settings.maxPendingPerSubscription
      ) {
        count.push(id);
      } else known.pending += n;
    }
    return count;
  }

  /** Passes until caught up (or `maxPasses`); answers the events read and the deliveries queued, null: cursor held. */
  async drain(maxPasses = 10): Promise<FanOutPass | null> {
    const total = { events: 0, queued: 0, skipped: 0, dropped: 0 };
    for (let i = 0; i < maxPasses; i++) {
      const pass = await this.pass();
      if (!pass) return i === 0 ? null : total;
      total.events += pass.events;
      total.queued += pass.queued;
      total.skipped += pass.skipped;
      total.dropped += pass.dropped;
      if (pass.events < this.settings.batchSize) break;
    }
    return total;
  }

  async pass(): Promise<FanOutPass | null> {
    await inTransaction(this.pool, (client) => sequencePlatformEvents(client, this.settings.batchSize));
    const written = await inTransaction(this.pool, async (client) => {
      const cursor = await lockEventCursor(client, WEBHOOK_CONSUMER);
      if (cursor === null) return null;
      const events = await webhookEventsAfter(client, cursor, this.settings.batchSize);
      if (events.length === 0) return { events: 0, pending: [] as string[], skipped: 0, dropped: 0 };
      const subscriptions = await activeWebhookSubscriptions(client);
      const rows: WebhookDeliveryInsert[] = [];
      let unreadable = 0;
      const privileges = new Map<string, Promise<ReadonlySet<Privilege>>>();
      const privilegesOf = (s: WebhookSubscriptionRow) => {
        const key = ownerKey(subscriptionOwner(s));
        let read = privileges.get(key);
        if (!read) privileges.set(key, (read = this.ownerPrivileges(subscriptionOwner(s))));
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
      const pending = await insertWebhookDeliveries(client, rows, this.settings.retrySchedule[0] ?? 0);
      // The pending bound, in the same transaction: a subscription past it loses its oldest waiting deliveries.
      const dropped = await dropOverflowingDeliveries(
        client,
        this.mayOverflow(rows),
        this.settings.maxPendingPerSubscription,
        (id, counted) => this.pendingEstimate.set(id, { pending: counted, at: Date.now() }),
      );
      await advanceEventCursor(client, WEBHOOK_CONSUMER, events.at(-1)!.seq);
      return { events: events.length, pending, skipped: unreadable, dropped };
    });
    if (!written) return null;
    if (written.pending.length > 0) this.onQueued();
    if (written.dropped > 0) countWebhookOutcome("dropped", written.dropped);
    const { events, pending, skipped, dropped } = written;
    return { events, queued: pending.length, skipped, dropped };
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

/**
 * While events keep coming, the fan-out looks again this soon (ms) rather than every WEBHOOK_POLL_MS: a calm stream's
 * deliveries no longer wait most of a poll for their rows (bench/webhooks "a calm subscription").
 */
export const WEBHOOK_FOLLOW_MS = 20;

/** Each worker's share of the fan-out (outboxConsumerLoop). */
export function webhookFanOutLoop(fanOut: WebhookFanOut, pollMs: number, logger: Logger): PeriodicLoop {
  return outboxConsumerLoop("webhook-fan-out", () => fanOut.drain(), pollMs, logger, { followMs: WEBHOOK_FOLLOW_MS });
}
