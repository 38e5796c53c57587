export * from "./states";
export * from "./lifecycle";
export * from "./reconciler";
export * from "./evaluations";
export { cancellationReason } from "./cancellation";
export * from "./listing";
