export * from "./states";
export * from "./lifecycle";
export * from "./reconciler";
export * from "./evaluations";
export { cancellationReason } from "./cancellation";
export * from "./listing";
export * from "./runner/task-definition";
export * from "./runner/task-runner";
