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
 * a cancelled task: 409; an evaluation stopped at the worker's time limit: 500). A refusal is a result, not a
 * failure, because retrying cannot change it.
 */
export const evaluationItemResult = z.union([
  z.object({ results: z.record(z.string(), entityEvaluationResult) }),
  z.object({
    refused: z.object({ code: z.enum(["NOT_FOUND", "CONFLICT", "INTERNAL_SERVER_ERROR"]), message: z.string() }),
  }),
]);

/** What an "evaluate" job returns: each item's outcome by its task id. */
export const evaluateJobResult = z.object({ items: z.record(z.string(), evaluationItemResult) });

export type EntityEvaluationResult = z.output<typeof entityEvaluationResult>;
export type EvaluationItemResult = z.output<typeof evaluationItemResult>;
export type EvaluateJobResult = z.output<typeof evaluateJobResult>;
