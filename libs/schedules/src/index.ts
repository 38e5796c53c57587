export * from "./schedule-kind";
export * from "./scheduled-test.kind";
export * from "./retention-policy.kind";
export * from "./schedule-kinds";
export * from "./schedule-firing";
export * from "./schedule-sync";
export * from "./start-schedules";
export * from "./schedule-slots";
