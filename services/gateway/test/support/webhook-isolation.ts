/** What webhook-isolation.int.spec.ts works with: its users, documents and the delivery rows it reads. */
import { eventually } from "@mdp/core/testing";

export const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.isolation_${name},PROD)`;
export const CREATE = `mutation($i: CreateWebhookSubscriptionInput!) {
  createWebhookSubscription(input: $i) { secret subscription { id } }
}`;
export const DELIVERIES = `query($i: ListWebhookDeliveriesInput!) {
  listWebhookDeliveries(input: $i) { total deliveries { id eventSeq status attempts error nextAttemptAt updatedAt } }
}`;
export const SUBSCRIPTIONS = `query($i: ListWebhookSubscriptionsInput) {
  listWebhookSubscriptions(input: $i) {
    subscriptions { id active disabledReason droppedDeliveries consecutiveFailures failingSince
                    previousSecretExpiresAt circuit { state openedAt nextProbeAt } }
  }
}`;

export interface Delivery {
  id: string;
  eventSeq: string;
  status: string;
  attempts: number;
  error: string | null;
  nextAttemptAt: number | null;
  updatedAt: number;
}
export interface Subscription {
  id: string;
  active: boolean;
  disabledReason: string | null;
  droppedDeliveries: number;
  consecutiveFailures: number;
  failingSince: number | null;
  previousSecretExpiresAt: number | null;
  circuit: { state: string; openedAt: number | null; nextProbeAt: number | null };
}

export const holds = (check: () => unknown, options?: { timeoutMs?: number }) =>
  eventually(
    "the expectations",
    async () => {
      await check();
      return true;
    },
    options,
  );
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
