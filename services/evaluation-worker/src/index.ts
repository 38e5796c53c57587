/**
 * The evaluation worker's public entry, for what runs its handler outside its own process (the gateway's tests run it
 * in process); `main.ts` is the process.
 */
export {
  createEvaluateHandler,
  evaluationGivenUp,
  evaluationHandler,
  evaluationsReconciled,
  type EvaluationHandler,
} from "./evaluation-handler";
export { TestHistoryRetention, TestResultHistory } from "./test-result-history";
export { ResultsPusher, type PushItem } from "./results.pusher";
export {
  EVENT_PRUNE_EVERY_MS,
  ON_CHANGE_CONSUMER,
  ON_CHANGE_SUSPENDED_ACTION,
  OnChangeEvaluator,
  onChangeLoop,
  onChangeRunStarter,
  prunePlatformEventsFully,
  type OnChangePass,
  type OnChangeSettings,
} from "./on-change.consumer";
export { setUpWebhooks, webhookSettings, type RunningWebhooks, type WebhookConfig } from "./webhooks/start";
export {
  pruneWebhookDeliveriesFully,
  reconcileWebhookDeliveries,
  UNREADABLE,
  WebhookFanOut,
  webhookDeliveryHandler,
  type WebhookSettings,
} from "./webhooks/webhooks";
export { postWebhook } from "./webhooks/webhook-post";
