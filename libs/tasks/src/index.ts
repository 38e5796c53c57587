export * from "./states";
export * from "./lifecycle";
export * from "./lease";
export * from "./task-status";
export * from "./reconciler";
export * from "./evaluation-lifecycle";
// The task table's statements are @mdp/db's; re-exported where the lifecycle's users have always found them.
export {
  listTasks,
  listTasksQueries,
  percentOf,
  type EvaluationProgress,
  type EvaluationRow,
  type StoredAnswer,
  type TaskFilter,
  type TaskPage,
} from "@mdp/db";
export { cancellationReason } from "./cancellation";
export * from "./runner/task-definition";
export * from "./runner/task-runner";
