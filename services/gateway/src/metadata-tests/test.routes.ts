import type { Router } from "express";
import { z } from "zod";
import { action, addActions } from "../http/action-router";
import type { PolicyEngine } from "../policies/policy-engine";
import { batchEvaluateRequest, evaluateRequest } from "./evaluation-request";
import type { EvaluationService } from "./evaluation.service";

export interface TestRoutesDeps {
  evaluation: EvaluationService;
  engine: PolicyEngine;
}

/** The actions a result's test takes for its outcome (docs/api.md "Test actions"); absent when it has none. */
const resultActions = z
  .array(
    z.object({
      type: z.string().describe("an action type, e.g. ADD_TAGS"),
      params: z.record(z.string(), z.array(z.string())).describe("e.g. {values: [urn:li:tag:pii]}"),
      wouldChange: z
        .boolean()
        .describe("whether pushing changes the entity because of it (planned against what was read)"),
      missingPrivilege: z
        .string()
        .optional()
        .describe(
          "present when the test's owner, or the caller pushing a test it does not own, lacks the privilege this " +
            "action needs (e.g. EDIT_ENTITY_TAGS): pushing leaves it out, and wouldChange is false",
        ),
      notApplied: z
        .literal("INACTIVE")
        .optional()
        .describe(
          "INACTIVE: the test is INACTIVE and the caller is not its owner, whose push alone runs an INACTIVE test's " +
            "actions: pushing leaves this action out whatever privileges are held, and wouldChange is false",
        ),
    }),
  )
  .optional()
  .describe("what pushing this result does (with push: false, what it would do)");

/** What the evaluation worker answers for one entity (@mdp/metadata-tests' EntityEvaluation), as JSON text. */
const entityResult = z.object({
  urn: z.string(),
  passing: z.array(z.object({ test: z.string(), type: z.literal("SUCCESS"), actions: resultActions })),
  failing: z.array(
    z.object({
      test: z.string(),
      type: z.literal("FAILURE"),
      failedRules: z
        .array(
          z.object({
            path: z.string().describe("where the rule sits in the definition, e.g. rules.and[1]"),
            property: z.string(),
            operator: z.string(),
            negated: z.boolean(),
            expected: z.array(z.string()).optional(),
            actual: z
              .array(z.unknown())
              .describe(
                "the values found (at most 20, each over 200 characters cut and marked); empty for a caller without GET_ENTITY",
              ),
            actualCount: z.number().int(),
            message: z.string(),
          }),
        )
        .describe("why it failed, rule by rule"),
      actions: resultActions,
    }),
  ),
  notApplicable: z.array(z.string()).describe("tests named or ACTIVE whose on clause does not select the entity"),
  evaluatedAt: z.number().int(),
});

const viewTests = { privilege: "VIEW_TESTS", to: "evaluate metadata tests" } as const;
const pushNote = "`push: true` also needs MANAGE_TESTS (403 `<actor> is unauthorized to push metadata test results.`).";

/** Metadata-test evaluation under /gms/test (docs/api.md), added to the router of /gms. */
export function addTestRoutes(router: Router, deps: TestRoutesDeps): void {
  // Rate-limited by the evaluation service, once the privileges and the body have passed.
  addActions(router, "/test", deps.engine, {
    evaluate: action({
      summary: "Evaluate metadata tests against one entity",
      description:
        "Runs every ACTIVE test whose `on` clause selects the entity (or the tests named in `testUrns`) and answers " +
        "the entity's results; with `push: true` they are also stored as its `testResults` aspect and the results' " +
        "test actions run in the same transaction (each result lists its `actions`).",
      requires: viewTests,
      privilegeNote: pushNote,
      request: evaluateRequest,
      readOnly: (input) => !input.push,
      response: entityResult,
      handler: (input, actor) => deps.evaluation.evaluate(actor, input),
    }),
    batchEvaluate: action({
      summary: "Evaluate metadata tests against several entities",
      description: "As evaluate, for up to 1000 entities at once: `{results: {<urn>: <result>}}` in the order asked.",
      requires: viewTests,
      privilegeNote: pushNote,
      request: batchEvaluateRequest,
      readOnly: (input) => !input.push,
      response: z.object({ results: z.record(z.string(), entityResult).describe("by entity urn, in the order asked") }),
      handler: (input, actor) => deps.evaluation.batchEvaluate(actor, input),
    }),
  });
}
