/** What the webhook worker's fan-out and dispatcher are set with, and whom a subscription's work runs for. */
import type { WebhookCircuitSettings, WebhookTargetPolicy } from "@mdp/webhooks";
import type { WebhookSubscriptionRow, WorkOwner } from "@mdp/db";

export interface WebhookSettings {
  /** WEBHOOK_MAX_PAYLOAD_BYTES */
  maxPayloadBytes: number;
  /** events one fan-out pass reads */
  batchSize: number;
  /** WEBHOOK_RETRY_SCHEDULE: the delay before each attempt (ms), one entry per attempt */
  retrySchedule: readonly number[];
  /** WEBHOOK_TIMEOUT_MS */
  timeoutMs: number;
  /** WEBHOOK_DELIVERY_CONCURRENCY: POSTs this process makes at once */
  concurrency: number;
  /** WEBHOOK_SUBSCRIPTION_CONCURRENCY: POSTs to one subscription at once, in the whole cluster */
  perSubscription: number;
  /** POSTs one owner's subscriptions may have in flight per process (webhookOwnerConcurrency) */
  perOwner: number;
  /** WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION */
  maxPendingPerSubscription: number;
  circuit: WebhookCircuitSettings;
  /** how often an idle dispatcher looks for due deliveries (ms) */
  idlePollMs: number;
  /** TOKEN_SIGNING_KEY: the secrets' sealing key is derived from it */
  serverSecret: string;
  /** URN_NAMESPACE: how audit rows and events name a subscription */
  urnNamespace: string;
  policy: WebhookTargetPolicy;
}

/** The owner a subscription's work runs for: its creator, bounded by the token that created it. */
export const subscriptionOwner = (
  s: Pick<WebhookSubscriptionRow, "ownerUrn" | "ownerTokenId" | "active">,
): WorkOwner => ({
  urn: s.ownerUrn,
  tokenId: s.ownerTokenId,
  suspended: !s.active,
});

/** The reason logged for an event its subscription's owner may not read. */
export const UNREADABLE = "its owner may not read this event (canReadPlatformEvent, privileges read at delivery)";
