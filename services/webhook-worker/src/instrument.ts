import { startTelemetry } from "@mdp/core";

// Imported first by main.ts so instrumentation is in place before pg and ioredis load.
export const stopTelemetry = startTelemetry("webhook-worker");
