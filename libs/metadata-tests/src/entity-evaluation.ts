import type { ParsedDefinition } from "./definition.types";
import type { EntitySnapshot } from "./entity.types";
import type { FailedRule } from "./failed-rule";
import { evaluateTest } from "./test.evaluator";

/** A test to run: its urn and its parsed definition. */
export interface TestToRun {
  urn: string;
  definition: ParsedDefinition;
}

export interface PassingResult {
  test: string;
  type: "SUCCESS";
}

export interface FailingResult {
  test: string;
  type: "FAILURE";
  failedRules: FailedRule[];
}

/**
 * The outcome of several tests on one entity, in the shape `POST /gms/test?action=evaluate` answers. Tests that do not
 * apply (on.types or on.conditions) are listed in `notApplicable` rather than dropped, so a caller who named a test
 * learns why it is in neither list.
 */
export interface EntityEvaluation {
  urn: string;
  passing: PassingResult[];
  failing: FailingResult[];
  notApplicable: string[];
  /** epoch milliseconds */
  evaluatedAt: number;
}

/** Runs every test against the entity. Pure: `evaluatedAt` is the caller's clock. */
export function evaluateEntity(
  tests: readonly TestToRun[],
  entity: EntitySnapshot,
  evaluatedAt: number,
): EntityEvaluation {
  const evaluation: EntityEvaluation = { urn: entity.urn, passing: [], failing: [], notApplicable: [], evaluatedAt };
  for (const test of tests) {
    const outcome = evaluateTest(test.definition, entity);
    if (!outcome.applies) evaluation.notApplicable.push(test.urn);
    else if (outcome.passed) evaluation.passing.push({ test: test.urn, type: "SUCCESS" });
    else evaluation.failing.push({ test: test.urn, type: "FAILURE", failedRules: outcome.failedRules });
  }
  return evaluation;
}
