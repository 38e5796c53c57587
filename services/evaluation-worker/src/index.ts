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
