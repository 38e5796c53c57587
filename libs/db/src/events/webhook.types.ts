/**
 * Webhooks (docs/webhooks.md): subscriptions (webhook_subscription) and the delivery log (webhook_delivery), whose
 * rows the evaluation workers' fan-out writes in the transaction that moves the `webhooks` cursor of the platform-event
 * outbox, and whose delivery jobs update as they try. This file holds what their repositories share: the consumer's
 * name, the limits, a delivery's status and a subscription's row; the statements are in webhook-*.repository.ts.
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

/** What the API shows of a subscription beyond its settings: its circuit, failures, drops and secret rotation. */
export interface WebhookSubscriptionHealth {
  previousSecretExpiresAt: Date | null;
  consecutiveFailures: number;
  failingSince: Date | null;
  circuitState: string;
  circuitOpenedAt: Date | null;
  circuitNextProbeAt: Date | null;
  droppedDeliveries: bigint;
}

export type WebhookSubscriptionInsert = Omit<WebhookSubscriptionRow, "createdAt" | "updatedAt" | "disabledReason">;
