export * from "./connection";
export * from "./job-options";
export * from "./names";
export * from "./payloads";
export * from "./producer";
export * from "./worker";
export * from "./worker-process";
