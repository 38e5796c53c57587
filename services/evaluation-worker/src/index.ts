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
export { TABLE_PRUNE_EVERY_MS, tableRetentionChores, type TableRetentionConfig } from "./table-retention";
export { OnChangeEvaluator } from "./on-change.consumer";
export { onChangeLoop } from "./on-change-loop";
export {
  ON_CHANGE_CONSUMER,
  ON_CHANGE_SUSPENDED_ACTION,
  type OnChangePass,
  type OnChangeSettings,
} from "./on-change-settings";
export { onChangeRunStarter } from "./on-change-run-starter";
export { EVENT_PRUNE_EVERY_MS, prunePlatformEventsFully } from "./platform-event-prune";
export { evaluationRegistry } from "./evaluation-metrics";
