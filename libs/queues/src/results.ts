import { z } from "zod";

/**
 * What an "evaluate" job of evaluate-tests returns. The gateway waiting for it re-checks it with these schemas (a
 * worker of another version may have produced it) before answering its callers.
 */
// The gateway passes failed rules through to its caller as they are; checking each of their fields on every answer
// would cost more than the rest of the check together, for data this service produced itself.
const failedRule = z.custom<object>((value) => typeof value === "object" && value !== null, {
  error: "must be an object",
});

export const entityEvaluationResult = z.object({
  urn: z.string(),
  passing: z.array(z.object({ test: z.string(), type: z.literal("SUCCESS") })),
  failing: z.array(z.object({ test: z.string(), type: z.literal("FAILURE"), failedRules: z.array(failedRule) })),
  notApplicable: z.array(z.string()),
  evaluatedAt: z.number().int(),
});

/**
 * One item's outcome: the results per urn, or a refusal its caller must see as such (an unknown entity or test: 404;
 * a cancelled task: 409; an evaluation stopped at the worker's time or memory limit: 400 naming it, sent as 500 by
 * workers of earlier versions). A refusal is a result, not a failure, because retrying cannot change it.
 */
export const evaluationItemResult = z.union([
  z.object({ results: z.record(z.string(), entityEvaluationResult) }),
  z.object({
    refused: z.object({
      code: z.enum(["NOT_FOUND", "CONFLICT", "BAD_USER_INPUT", "INTERNAL_SERVER_ERROR"]),
      message: z.string(),
    }),
  }),
]);

/** What an "evaluate" job returns: each item's outcome by its task id. */
export const evaluateJobResult = z.object({ items: z.record(z.string(), evaluationItemResult) });

/**
 * One item's outcome as the worker sends it to the waiting gateway: each urn's result already serialized, which the
 * gateway writes into its answer as it is. Parsing a batch's results into objects, checking them and serializing them
 * again took the gateway's event loop 10-30 ms for a batchEvaluate of 1,000 urns, and about 4% of its work per
 * evaluate request. The shape workers sent before (`results`, objects) is still read, so gateways can be upgraded
 * before workers.
 */
/**
 * How long the request's evaluation held a worker thread (ms): the gateway charges it to its caller's evaluation-time
 * budget (RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE). Absent from workers of earlier versions (nothing is charged).
 */
const evaluationMs = z.number().nonnegative().optional();

export const evaluationItemReply = z.union([
  z.object({ resultsJson: z.record(z.string(), z.string()), evaluationMs }),
  ...evaluationItemResult.options.map((option) => option.extend({ evaluationMs })),
]);

/**
 * What an "evaluate" job's worker sends to the gateway waiting for it (see evaluationItemReply). A worker answers
 * each request as soon as it is done, so that a slow request never holds the answers of those batched with it: every
 * reply but the job's last says `partial: true`, and the last one completes the job's requests (a request of the job
 * that none of them answered is an error). Workers of earlier versions sent one reply with every request in it.
 */
export const evaluateJobReply = z.object({
  items: z.record(z.string(), evaluationItemReply),
  partial: z.literal(true).optional(),
});

export type EntityEvaluationResult = z.output<typeof entityEvaluationResult>;
export type EvaluationItemResult = z.output<typeof evaluationItemResult>;
export type EvaluateJobResult = z.output<typeof evaluateJobResult>;
export type EvaluationItemReply = z.output<typeof evaluationItemReply>;
export type EvaluateJobReply = z.output<typeof evaluateJobReply>;

/** An item's outcome as the worker sends it: its results serialized one urn at a time. */
export function toItemReply(result: EvaluationItemResult): EvaluationItemReply {
  if ("refused" in result) return result;
  const resultsJson: Record<string, string> = {};
  for (const [urn, evaluation] of Object.entries(result.results)) resultsJson[urn] = JSON.stringify(evaluation);
  return { resultsJson };
}

/**
 * evaluateJobReply's check of a reply, with a fast path for the shape a worker of this version sends: every item its
 * results as JSON text (strings by urn) and its evaluation time. That shape is checked field by field here, as the
 * schema would, without building a copy of the reply; any other (a refusal, an earlier worker's objects, anything
 * malformed) goes through the schema, which names what is wrong.
 */
export function checkEvaluateJobReply(value: unknown): ReturnType<typeof evaluateJobReply.safeParse> {
  return isAnsweredReply(value) ? { success: true, data: value } : evaluateJobReply.safeParse(value);
}

function isAnsweredReply(value: unknown): value is EvaluateJobReply {
  if (!isRecord(value) || !isRecord(value.items) || (value.partial !== undefined && value.partial !== true)) {
    return false;
  }
  // Only the keys of that shape: the schema strips others, and a stray `refused` beside the results must not survive.
  if (!onlyKeys(value, REPLY_KEYS)) return false;
  for (const taskId in value.items) {
    const item = value.items[taskId];
    if (!isRecord(item) || !isRecord(item.resultsJson) || !onlyKeys(item, ITEM_KEYS)) return false;
    const ms = item.evaluationMs;
    if (ms !== undefined && !(typeof ms === "number" && Number.isFinite(ms) && ms >= 0)) return false;
    for (const urn in item.resultsJson) if (typeof item.resultsJson[urn] !== "string") return false;
  }
  return true;
}

const REPLY_KEYS = new Set(["items", "partial"]);
const ITEM_KEYS = new Set(["resultsJson", "evaluationMs"]);

function onlyKeys(value: Record<string, unknown>, allowed: Set<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
