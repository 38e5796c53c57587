import type { Privilege } from "@mdp/core";
import type { ParsedDefinition } from "./definition.types";
import type { EntitySnapshot } from "./entity.types";
import type { FailedRule } from "./failed-rule";
import type { NotApplied } from "./action-privileges";
import { evaluateTest } from "./test.evaluator";

/** A test to run: its urn and its parsed definition. */
export interface TestToRun {
  urn: string;
  definition: ParsedDefinition;
}

export interface PassingResult {
  test: string;
  type: "SUCCESS";
  /** the test's passing actions, when it has any (action-annotations.ts annotateActions) */
  actions?: ResultAction[];
}

export interface FailingResult {
  test: string;
  type: "FAILURE";
  failedRules: FailedRule[];
  /** the test's failing actions, when it has any */
  actions?: ResultAction[];
}

/** One action of a result as the evaluate answer lists it: what pushing would do, and whether it changes anything. */
export interface ResultAction {
  type: string;
  params: Record<string, string[]>;
  wouldChange: boolean;
  /**
   * the privilege the push may not use for it (its test's owner lacks it, or the caller pushing someone else's test
   * does): pushing does not apply it (docs/api.md "Test actions")
   */
  missingPrivilege?: Privilege;
  /** why pushing applies none of its test's actions whatever is held: an INACTIVE test pushed by another than its owner */
  notApplied?: NotApplied;
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

/** Runs every test against the entity. Pure: `evaluatedAt` is the caller's clock; `withValues` as evaluateTest's. */
export function evaluateEntity(
  tests: readonly TestToRun[],
  entity: EntitySnapshot,
  evaluatedAt: number,
  withValues = true,
): EntityEvaluation {
  const evaluation: EntityEvaluation = { urn: entity.urn, passing: [], failing: [], notApplicable: [], evaluatedAt };
  for (const test of tests) {
    const outcome = evaluateTest(test.definition, entity, withValues);
    if (!outcome.applies) evaluation.notApplicable.push(test.urn);
    else if (outcome.passed) evaluation.passing.push({ test: test.urn, type: "SUCCESS" });
    else evaluation.failing.push({ test: test.urn, type: "FAILURE", failedRules: outcome.failedRules });
  }
  return evaluation;
}
