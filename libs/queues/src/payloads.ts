import { z } from "zod";
import type { QueueKey } from "./names";

/** W3C trace context carried from the producer into the worker. */
const trace = z.record(z.string(), z.string()).optional();

export const truncatePayload = z.object({
  taskId: z.string().min(1),
  entityType: z.string().min(1),
  aspect: z.string().min(1),
  endTimeMillis: z.number().int().nonnegative(),
  batchSize: z.number().int().min(1).max(1_000_000),
  timeoutSeconds: z.number().int().min(1).optional(),
  trace,
});

export const evaluatePayload = z.object({
  urns: z.array(z.string().min(1)).min(1),
  push: z.boolean(),
  testUrns: z.array(z.string().min(1)).optional(),
  actorUrn: z.string().min(1),
  trace,
});

/** The one map from queue to payload schema: producers and workers both check against it. */
export const PAYLOADS = {
  truncate: truncatePayload,
  evaluate: evaluatePayload,
} as const satisfies Record<QueueKey, z.ZodType>;

export type Payload<Q extends QueueKey> = z.output<(typeof PAYLOADS)[Q]>;
