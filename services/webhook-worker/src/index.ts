/**
 * The webhook worker's public entry, for what runs its fan-out and dispatcher outside its own process (the gateway's
 * tests run them in process); `main.ts` is the process.
 */
export {
  pruneWebhookDeliveriesFully,
  settleWebhookDeliveriesFully,
  WEBHOOK_PRUNE_EVERY_MS,
  WEBHOOK_SETTLE_EVERY_MS,
} from "./delivery-chores";
export { WebhookDispatcher } from "./dispatcher";
export { WebhookFanOut, webhookFanOutLoop, type FanOutPass } from "./fan-out";
export { UNREADABLE, type WebhookSettings } from "./settings";
export { setUpWebhooks, webhookSettings, type RunningWebhooks, type WebhookConfig } from "./start";
export { registerWebhookGauges, webhookRegistry } from "./webhook-metrics";
export { postWebhook } from "./webhook-post";
