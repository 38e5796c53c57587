import { z } from "zod";
import { parseUrnField } from "@mdp/core";
import type { EvaluationItem } from "@mdp/queues";

export const MAX_BATCH_URNS = 1000;
export const MAX_TEST_URNS = 1000;

const push = z.boolean({ error: "must be true or false" }).default(false);
const testUrnList = z
  .array(z.string({ error: "must be a test urn (a string)" }), { error: "must be a list of test urns" })
  .min(1, { error: "must name at least one test (leave it out to run every applicable test)" })
  .max(MAX_TEST_URNS, { error: `may name at most ${MAX_TEST_URNS} tests` });
const entityUrn = z.string({ error: "is required (an entity urn)" }).min(1, { error: "is required (an entity urn)" });

// `tests` is DataHub's name for the list; one of the two names, not both.
const oneListName = { error: "give testUrns or its alias tests, not both", path: ["tests"] };

/** `POST /gms/test?action=evaluate` (docs/api.md "Test evaluation"). */
export const evaluateRequest = z
  .strictObject({ urn: entityUrn, push, testUrns: testUrnList.optional(), tests: testUrnList.optional() })
  .refine((body) => !(body.testUrns && body.tests), oneListName);

/** `POST /gms/test?action=batchEvaluate`. */
export const batchEvaluateRequest = z
  .strictObject({
    urns: z
      .array(entityUrn, { error: "is required (a list of entity urns)" })
      .min(1, { error: "must name at least one entity" })
      .max(MAX_BATCH_URNS, { error: `may name at most ${MAX_BATCH_URNS} entities` }),
    push,
    testUrns: testUrnList.optional(),
    tests: testUrnList.optional(),
  })
  .refine((body) => !(body.testUrns && body.tests), oneListName);

export type EvaluateBody = z.output<typeof evaluateRequest>;
export type BatchEvaluateBody = z.output<typeof batchEvaluateRequest>;

/** Either request, as the evaluation service works with it: urns checked and without duplicates. */
export interface EvaluationRequest {
  urns: string[];
  push: boolean;
  /** absent: every ACTIVE test whose on clause selects the entity */
  testUrns?: string[];
  /** runTestDefinition: the unsaved definition `testUrns` names (see @mdp/queues' evaluationItem) */
  unsavedTest?: EvaluationItem["unsavedTest"];
}

/** A malformed urn is a 400 naming the field and the value, e.g. `urns[2]` or `tests[0]`. */
export function fromEvaluate(body: EvaluateBody): EvaluationRequest {
  parseUrnField("urn", body.urn);
  return { urns: [body.urn], push: body.push, ...testsOf(body) };
}

export function fromBatchEvaluate(body: BatchEvaluateBody): EvaluationRequest {
  body.urns.forEach((urn, i) => parseUrnField(`urns[${i}]`, urn));
  return { urns: [...new Set(body.urns)], push: body.push, ...testsOf(body) };
}

function testsOf(body: { testUrns?: string[]; tests?: string[] }): { testUrns?: string[] } {
  const field = body.tests ? "tests" : "testUrns";
  const named = body.testUrns ?? body.tests;
  if (!named) return {};
  named.forEach((urn, i) => parseUrnField(`${field}[${i}]`, urn, "test"));
  return { testUrns: [...new Set(named)] };
}
