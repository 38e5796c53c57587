/** What the webhooks tests share (webhooks-*.int.spec.ts): their users, GraphQL documents, and a check that holds. */
import { eventually } from "@mdp/core/testing";

export const READER = "urn:li:corpuser:hooks-reader"; // GET_ENTITY
export const BLIND = "urn:li:corpuser:hooks-blind"; // nothing
export const LOSER = "urn:li:corpuser:hooks-loser"; // GET_ENTITY, taken away before the delivery
export const ADMIN = "urn:li:corpuser:hooks-admin"; // MANAGE_SYSTEM_OPERATIONS
export const REPLAYER = "urn:li:corpuser:hooks-replayer"; // GET_ENTITY (READER has its four subscriptions by then)
export const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.hooks_${name},PROD)`;

export const CREATE = `mutation($i: CreateWebhookSubscriptionInput!) {
  createWebhookSubscription(input: $i) { secret subscription { id ownerUrn url eventTypes active } }
}`;
export const DELIVERIES = `query($i: ListWebhookDeliveriesInput!) {
  listWebhookDeliveries(input: $i) { total deliveries { id eventId eventSeq status attempts responseStatus error generation durationMs } }
}`;

export interface Delivery {
  id: string;
  eventId: string;
  eventSeq: string;
  status: string;
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  generation: number;
}

/** Waits until the expectations in `check` pass (eventually wants a value: true once they do). */
export const holds = (check: () => unknown, options?: { timeoutMs?: number }) =>
  eventually(
    "the expectations",
    async () => {
      await check();
      return true;
    },
    options,
  );
