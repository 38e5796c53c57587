import { z } from "zod";
import { SCHEDULE_KIND_NAMES, type QueueKey } from "./names";

/**
 * The X-Request-Id of the request that queued the job, so that the worker's log lines for it carry the same id
 * (createWorker). Optional: jobs queued before it existed, or outside a request (the reconcilers), have none.
 */
const requestId = z.string().min(1).max(128).optional();

/**
 * The access token the job's actor authenticated with (its id, a UUID), when it used one: the pushed aspects' writer
 * is stamped with it (aspect.created_via, DataHub's audit stamp). Absent: the system client, a schedule's firing.
 */
const actorTokenId = z.string().min(1).max(64).optional();

export const truncatePayload = z.object({
  taskId: z.string().min(1),
  entityType: z.string().min(1),
  aspect: z.string().min(1),
  endTimeMillis: z.number().int().nonnegative(),
  batchSize: z.number().int().min(1).max(1_000_000),
  timeoutSeconds: z.number().int().min(1).optional(),
  requestId,
});

/**
 * One evaluate or batchEvaluate request: its durable task id, the entities, and the tests to run (absent: every
 * ACTIVE test whose `on` selects the entity).
 */
export const evaluationItem = z.object({
  taskId: z.string().min(1),
  urns: z.array(z.string().min(1)).min(1),
  push: z.boolean(),
  testUrns: z.array(z.string().min(1)).min(1).optional(),
  actorUrn: z.string().min(1),
  actorTokenId,
  requestId,
  /**
   * Whether the caller may read the entities (GET_ENTITY, decided by the gateway from its cached privileges): only then
   * do failed rules in its answer carry the values found. Absent (a gateway of an earlier version): not shown.
   */
  showValues: z.boolean().optional(),
  /**
   * The caller's own recent write, as the primary's WAL position after it (`16/B374D848`): the worker reads the
   * entities on a read replica only once it has replayed this (docs/postgres.md "Read-your-writes").
   */
  readAfter: z
    .string()
    .regex(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/)
    .optional(),
  /**
   * runTestDefinition: a definition not saved as a test, evaluated under the urn `testUrns` names (one of its own,
   * never a stored test's), as the gateway parsed it. `applyActions` (its DEFAULT mode): its actions are applied to
   * the entities for the actor, as a push applies a stored test's for its owner; no result is stored for it.
   */
  unsavedTest: z
    .object({
      urn: z.string().min(1),
      onTypes: z.array(z.string().min(1)),
      definition: z.unknown(),
      hash: z.string().min(1),
      applyActions: z.boolean(),
    })
    .optional(),
});

/** Most requests in one evaluate job (the gateway puts at most 100 together). */
export const EVALUATE_MAX_ITEMS = 1000;

/**
 * Evaluate tests and answer with the results (POST /gms/test?action=evaluate, batchEvaluate). The gateway puts the
 * requests that arrive together into one job, so that under load the queue and database round trips are shared
 * rather than paid per request; each item keeps its own task id and result.
 */
export const evaluateBatchPayload = z.object({
  kind: z.literal("evaluate"),
  items: z.array(evaluationItem).min(1).max(EVALUATE_MAX_ITEMS),
  /** the ReplyInbox channel of the gateway waiting for the results (absent: nobody waits) */
  replyTo: z.string().min(1).optional(),
  /**
   * How long the gateway waits for the reply before its callers get a 504 naming their task ids (its
   * EVALUATE_TIMEOUT_MS), counted from the job's timestamp: the worker records the task rows of a job that ran that
   * long (absent: it records them always).
   */
  waitMs: z.number().int().positive().optional(),
});

/** Evaluate one test against every entity its `on` clause selects, in batches, as a background task (runTest). */
export const runTestPayload = z.object({
  kind: z.literal("runTest"),
  taskId: z.string().min(1),
  testUrn: z.string().min(1),
  push: z.boolean(),
  batchSize: z.number().int().min(1).max(10_000),
  actorUrn: z.string().min(1),
  actorTokenId,
  requestId,
  /** as an evaluate item's: its creator's recent write, which a replica must have replayed to serve a batch */
  readAfter: z
    .string()
    .regex(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/)
    .optional(),
});

/** previewTestImpact's sample: at most this many entities (docs/limits.md). */
export const PREVIEW_MAX_SAMPLE = 5_000;

/**
 * An impact preview (previewTestImpact): evaluate a test's current definition and an edited one, unsaved, against a
 * sample of the entities either selects, and answer how many results would flip and which actions would fire. It
 * writes nothing; the gateway that queued it waits for the reply.
 */
export const previewTestPayload = z.object({
  kind: z.literal("previewTest"),
  testUrn: z.string().min(1),
  /** the edited definition, as the gateway's parser normalized it (the worker validates it again in its thread) */
  definition: z.unknown(),
  /** the registry's entity types the edited definition selects */
  onTypes: z.array(z.string().min(1)).max(1_000),
  sampleSize: z.number().int().min(1).max(PREVIEW_MAX_SAMPLE),
  actorUrn: z.string().min(1),
  replyTo: z.string().min(1),
  requestId,
});

export const evaluatePayload = z.discriminatedUnion("kind", [evaluateBatchPayload, runTestPayload, previewTestPayload]);

/**
 * A retention policy's schedule fired (retention-schedules.ts): the worker reads the policy and starts its truncation
 * task. Only the id travels: the policy row is the source of truth, read when the job runs.
 */
export const retentionRunPayload = z.object({ policyId: z.string().min(1).max(64) });

/**
 * A test's schedule fired (test-schedules.ts): the worker reads the test and starts its run. Only the urn travels: the
 * test row (its schedule_cron) is the source of truth, read when the job runs.
 */
export const testScheduleRunPayload = z.object({ testUrn: z.string().min(1).max(1_000) });

/**
 * Make schedules' job schedulers follow their rows (schedule-sync): one schedule, by its kind and id (the gateway,
 * after a write), or every schedule of every kind (neither given: the periodic full sync).
 */
export const scheduleSyncPayload = z.object({
  scheduleKind: z.enum(SCHEDULE_KIND_NAMES).optional(),
  id: z.string().min(1).max(1_000).optional(),
  requestId,
});

/** A chore's firing (chores.ts): the job's name says which chore; nothing travels. */
export const chorePayload = z.object({});

/** The one map from queue to payload schema: producers and workers both check against it. */
export const PAYLOADS = {
  truncate: truncatePayload,
  evaluate: evaluatePayload,
  retention: retentionRunPayload,
  testSchedule: testScheduleRunPayload,
  scheduleSync: scheduleSyncPayload,
  truncationChores: chorePayload,
  evaluationChores: chorePayload,
  webhookChores: chorePayload,
  gatewayChores: chorePayload,
} as const satisfies Record<QueueKey, z.ZodType>;

export type Payload<Q extends QueueKey> = z.output<(typeof PAYLOADS)[Q]>;
/** What a producer passes: defaults may be left out. */
export type PayloadInput<Q extends QueueKey> = z.input<(typeof PAYLOADS)[Q]>;
export type EvaluationItem = z.output<typeof evaluationItem>;
