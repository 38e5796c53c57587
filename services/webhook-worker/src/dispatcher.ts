import {
  canReadPlatformEvent,
  makeUrn,
  nextRetryDelay,
  SYSTEM_ACTOR_URN,
  type Logger,
  type Privilege,
} from "@mdp/core";
import {
  nextWebhookCircuit,
  signStandardWebhook,
  signWebhookBody,
  STANDARD_WEBHOOK_HEADERS,
  unsealWebhookSecret,
  WEBHOOK_HEADERS,
} from "@mdp/webhooks";
import {
  claimWebhookDeliveries,
  deliveryToSend,
  inTransaction,
  insertAuditEvents,
  insertEntityChangeEvents,
  lockWebhookCircuit,
  ownerKey,
  recordWebhookAttempt,
  webhookClaimCandidates,
  writeWebhookCircuit,
  type OwnerPrivileges,
  type WebhookDeliveryStatus,
} from "@mdp/db";
import { KeyedSlots } from "@mdp/queues";
import { LRUCache } from "lru-cache";
import { postWebhook } from "./webhook-post";
import { countWebhookOutcome, type WebhookOutcome } from "./webhook-metrics";
import { subscriptionOwner, UNREADABLE, type WebhookSettings } from "./settings";
import type pg from "pg";

export const OWNER_PRIVILEGES_TTL_MS = 1_000;
/** Owners (with token and suspension) remembered at most: past it, the least recently read is forgotten. */
const MAX_OWNERS_REMEMBERED = 10_000;

/**
 * `read`, remembered per owner (and token, and suspension) for OWNER_PRIVILEGES_TTL_MS: at hundreds of deliveries a
 * second, reading the policies afresh for each was half the worker's work (bench/webhooks), while a second's
 * staleness is what the gateway's own cache allows between a policy's change and its invalidation reaching it. A read
 * that fails is not remembered.
 */
export function briefly(read: OwnerPrivileges, ttlMs = OWNER_PRIVILEGES_TTL_MS): OwnerPrivileges {
  const cache = new LRUCache<string, Promise<ReadonlySet<Privilege>>>({ max: MAX_OWNERS_REMEMBERED, ttl: ttlMs });
  return (who) => {
    const key = ownerKey(who);
    const hit = cache.get(key);
    if (hit) return hit;
    const value = read(who);
    cache.set(key, value);
    value.catch(() => cache.peek(key) === value && cache.delete(key));
    return value;
  };
}

/** A claimed delivery is held this long past WEBHOOK_TIMEOUT_MS: longer, its worker is taken for dead (ms). */
export const WEBHOOK_LEASE_MARGIN_MS = 15_000;

/** 4xx answers that are retried: the receiver's timeout, "too early", and its rate limit. */
const RETRIED_4XX = new Set([408, 425, 429]);

/**
 * The delivery dispatcher (docs/webhooks.md "How delivery works"). Deliveries wait in PostgreSQL, not in a queue:
 * each pending row has its next attempt time, and a worker with a free slot claims due ones in one short transaction:
 * the subscriptions with a delivery due and room for one more in flight (fewer than WEBHOOK_SUBSCRIPTION_CONCURRENCY
 * held in the whole cluster; an open circuit: one probe once it is due), locked with FOR UPDATE SKIP LOCKED so two
 * workers never count one subscription's room at once, then their earliest due rows, each held under a lease. A
 * subscription at its bound is simply not chosen: nothing of it is read, handed back or rescheduled until one of its
 * POSTs ends, so a hanging receiver's backlog waits at the cost of two index probes per claim. Within the process,
 * one owner's subscriptions hold at most `perOwner` of its `concurrency` slots.
 *
 * It claims when woken (the fan-out committed deliveries, a POST ended, a retry it scheduled came due) and otherwise
 * every `idlePollMs`: deliveries written by another process (a replay, another worker's fan-out) wait at most that.
 */
export class WebhookDispatcher {
  /** POSTs in flight in this process, per subscription owner (the per-owner cap) */
  private readonly ownerRunning = new KeyedSlots();
  private readonly active = new Set<Promise<unknown>>();
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;
  /** epoch ms of the soonest retry this process scheduled (it wakes then, not only at the next idle poll) */
  private soonest = Infinity;
  private readonly privilegesOf: OwnerPrivileges;
  /** claim rounds made: what an idle worker costs (tests read it) */
  claims = 0;

  constructor(
    private readonly pool: pg.Pool,
    ownerPrivileges: OwnerPrivileges,
    private readonly settings: Omit<WebhookSettings, "maxPayloadBytes" | "batchSize" | "maxPendingPerSubscription">,
    private readonly logger: Logger,
  ) {
    this.privilegesOf = briefly(ownerPrivileges);
  }

  /** POSTs in flight in this process. */
  get inFlight(): number {
    return this.ownerRunning.held;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Claims again at once (deliveries were written, a slot came free). */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stops claiming and waits for the POSTs in flight (each bounded by WEBHOOK_TIMEOUT_MS). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.active]);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      let more = false;
      try {
        more = await this.claim();
      } catch (error) {
        this.logger.warn({ err: error }, "claiming webhook deliveries failed; trying again");
      }
      if (this.stopped) break;
      if (more || this.woken) continue;
      const wait = Math.max(0, Math.min(this.settings.idlePollMs, this.soonest - Date.now()));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeUp = done;
      });
      this.wakeUp = undefined;
      if (this.soonest <= Date.now()) this.soonest = Infinity;
    }
  }

  /**
   * One claim round: answers true when every free slot was filled and one came free since (more may be due: claim
   * again at once), false otherwise (wait for a wake or the idle poll).
   */
  async claim(): Promise<boolean> {
    const free = this.settings.concurrency - this.ownerRunning.held;
    if (free <= 0) return false;
    this.claims++;
    const leaseMs = this.settings.timeoutMs + WEBHOOK_LEASE_MARGIN_MS;
    const claimed = await inTransaction(this.pool, async (client) => {
      // Owners at their share of this worker's slots are not chosen at all: the choice goes to the others.
      const full = this.ownerRunning.atLeast(this.settings.perOwner);
      const candidates = await webhookClaimCandidates(client, this.settings.perSubscription, free, full);
      const taken: Array<{ id: string; ownerUrn: string }> = [];
      const ownerTaken = new Map<string, number>();
      for (const c of candidates) {
        const left = free - taken.length;
        if (left <= 0) break;
        const ownerHas = this.ownerRunning.heldFor(c.ownerUrn) + (ownerTaken.get(c.ownerUrn) ?? 0);
        const room = Math.min(
          left,
          this.settings.perOwner - ownerHas,
          (c.circuitState === "CLOSED" ? this.settings.perSubscription : 1) - c.inFlight,
        );
        if (room <= 0) continue;
        const ids = await claimWebhookDeliveries(client, c.id, room, leaseMs);
        ownerTaken.set(c.ownerUrn, (ownerTaken.get(c.ownerUrn) ?? 0) + ids.length);
        for (const id of ids) taken.push({ id, ownerUrn: c.ownerUrn });
      }
      return taken;
    });
    for (const { id, ownerUrn } of claimed) {
      const release = this.ownerRunning.take([ownerUrn]);
      const work: Promise<unknown> = this.deliver(id)
        .catch((error: unknown) => this.logger.error({ err: error, deliveryId: id }, "webhook delivery failed"))
        .finally(() => {
          release();
          this.active.delete(work);
          this.wake();
        });
      this.active.add(work);
    }
    return claimed.length >= free && this.ownerRunning.held < this.settings.concurrency;
  }

  /**
   * One attempt of a claimed delivery: reads its row and subscription, checks again that the owner may read the event
   * now (else SKIPPED, never sent), signs it (the mdp-signature and Standard Webhooks headers, with both secrets during
   * a rotation's overlap) and POSTs it, then records the outcome and the subscription's circuit in one transaction. A
   * 2xx ends it DELIVERED; a 4xx other than 408, 425 and 429, or a refused target, ends it FAILED at once (the same
   * body would be refused again: replay it once fixed); anything else is attempted again as WEBHOOK_RETRY_SCHEDULE
   * says, then FAILED.
   */
  async deliver(deliveryId: string): Promise<WebhookOutcome | "gone"> {
    const delivery = await deliveryToSend(this.pool, deliveryId);
    if (!delivery || delivery.status !== "PENDING") return "gone";
    const s = delivery.subscription;
    const skip = async (error: string) => {
      await recordWebhookAttempt(this.pool, deliveryId, {
        status: "SKIPPED",
        responseStatus: null,
        durationMs: null,
        error,
        attempted: false,
      });
      countWebhookOutcome("skipped");
      return "skipped" as const;
    };
    if (!s.active) return skip("its subscription was turned off");
    const privileges = await this.privilegesOf(subscriptionOwner(s));
    if (!canReadPlatformEvent(delivery, { urn: s.ownerUrn, privileges })) {
      this.logger.info({ deliveryId, subscriptionId: s.id, eventId: delivery.eventId }, "webhook delivery skipped");
      return skip(UNREADABLE);
    }
    const secrets = [s.secretSealed, ...(s.previousSecretSealed ? [s.previousSecretSealed] : [])].map((sealed) =>
      unsealWebhookSecret(sealed, this.settings.serverSecret),
    );
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
        [WEBHOOK_HEADERS.signature]: signWebhookBody(secrets, timestamp, delivery.body),
        [STANDARD_WEBHOOK_HEADERS.id]: delivery.eventId,
        [STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestamp),
        [STANDARD_WEBHOOK_HEADERS.signature]: signStandardWebhook(secrets, delivery.eventId, timestamp, delivery.body),
      },
      delivery.body,
      { timeoutMs: this.settings.timeoutMs, policy: this.settings.policy },
    );
    const ok = outcome.error === null;
    const permanent =
      outcome.refused ||
      (outcome.status !== null && outcome.status >= 400 && outcome.status < 500 && !RETRIED_4XX.has(outcome.status));
    const retryInMs = ok || permanent ? null : nextRetryDelay(this.settings.retrySchedule, delivery.attempts + 1);
    const status: WebhookDeliveryStatus = ok ? "DELIVERED" : retryInMs === null ? "FAILED" : "PENDING";
    const attempt = {
      status,
      responseStatus: outcome.status,
      durationMs: outcome.durationMs,
      error: outcome.error,
      attempted: true,
      retryInMs: retryInMs ?? 0,
    };
    // A success of a subscription that was healthy when read changes nothing of its circuit: one statement, and no
    // lock on the subscription's row, which every POST of a busy subscription would otherwise queue on.
    let circuit: Awaited<ReturnType<WebhookDispatcher["recordCircuit"]>> = null;
    if (ok && s.healthy) await recordWebhookAttempt(this.pool, deliveryId, attempt);
    else {
      circuit = await inTransaction(this.pool, async (client) => {
        await recordWebhookAttempt(client, deliveryId, attempt);
        return this.recordCircuit(client, s.id, ok);
      });
    }
    if (retryInMs !== null) this.soonest = Math.min(this.soonest, Date.now() + retryInMs);
    const result: WebhookOutcome = ok ? "delivered" : status === "FAILED" ? "failed" : "retried";
    countWebhookOutcome(result, 1, ok ? (Date.now() - delivery.createdAt) / 1000 : undefined);
    if (circuit?.opened || circuit?.disable) {
      this.logger.warn(
        { subscriptionId: s.id, opened: circuit.opened, disabled: circuit.disable },
        circuit.disable ? "webhook subscription turned off: failing too long" : "webhook circuit opened",
      );
    }
    return result;
  }

  /**
   * The subscription's circuit after an attempt (nextWebhookCircuit), in the attempt's transaction; failing for
   * WEBHOOK_DISABLE_AFTER_DAYS turns it off, with an event (EntityChangeEvent_v1 SCHEDULE SUSPEND about it, readable
   * by its owner) and an audit row (webhook.disabled).
   */
  private async recordCircuit(client: pg.PoolClient, subscriptionId: string, ok: boolean) {
    const row = await lockWebhookCircuit(client, subscriptionId);
    if (!row) return null;
    // A success with nothing to clear writes nothing: a calm subscription's row is not rewritten per delivery.
    if (ok && row.consecutiveFailures === 0 && row.circuitState === "CLOSED" && row.failingSince === null) return null;
    const next = nextWebhookCircuit(row, ok, new Date(), this.settings.circuit);
    const disable = next.disable && row.active;
    const days = Math.round(this.settings.circuit.disableAfterMs / 86_400_000);
    const reason = disable
      ? `every delivery attempt failed for ${days} days (WEBHOOK_DISABLE_AFTER_DAYS): fix the receiver, then turn it on`
      : null;
    await writeWebhookCircuit(client, { id: row.id, ...next.circuit }, reason);
    if (disable) {
      const urn = makeUrn(this.settings.urnNamespace, "webhookSubscription", row.id);
      await insertEntityChangeEvents(client, [
        {
          category: "SCHEDULE",
          operation: "SUSPEND",
          entityType: "webhookSubscription",
          entityUrn: urn,
          parameters: { reason: reason!, ownerUrn: row.ownerUrn, failingSince: row.failingSince?.getTime() ?? null },
          actorUrn: SYSTEM_ACTOR_URN,
          subjectActor: row.ownerUrn,
        },
      ]);
      await insertAuditEvents(client, [
        {
          actorUrn: SYSTEM_ACTOR_URN,
          action: "webhook.disabled",
          targetUrn: urn,
          details: { ownerUrn: row.ownerUrn, reason: reason!, failingSince: row.failingSince?.toISOString() ?? null },
        },
      ]);
    }
    return { ...next, disable };
  }
}
