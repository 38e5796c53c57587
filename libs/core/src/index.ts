export * from "./config";
export * from "./errors";
export * from "./logger";
export * from "./telemetry";
export * from "./urn";
export * from "./otel-sdk";
export * from "./registry/entity-registry";
export * from "./storable";
