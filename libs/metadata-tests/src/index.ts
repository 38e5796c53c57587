// Parser and evaluator of metadata-test definitions: pure functions, no I/O (see README.md).
export { parseTestDefinition, definitionFromJson } from "./definition.parser";
export { normalizedDefinitionText } from "./normalized-text";
export { DEFINITION_LIMITS } from "./definition-limits";
export { evaluateTest, appliesToEntityType, entityTypeMatches, type TestOutcome } from "./test.evaluator";
export {
  evaluateEntity,
  type EntityEvaluation,
  type FailingResult,
  type PassingResult,
  type ResultAction,
  type TestToRun,
} from "./entity-evaluation";
export {
  mergeTestResults,
  readTestResults,
  sameJson,
  sameResultsOf,
  testResultsOf,
  type StoredTestResult,
  type TestResultsAspect,
} from "./test-results";
export { pushedTestResults, type PushedTestResults } from "./pushed-results";
export { TestDefinitionError, type DefinitionProblem } from "./test-definition.error";
export { cutValue, withoutValues, MAX_ACTUAL, type FailedRule } from "./failed-rule";
export {
  RESULT_LIMITS,
  answerTooLarge,
  boundedTestResults,
  entityResultTooLarge,
  evaluationWithoutValues,
  storedResultsWithoutValues,
  utf8Bytes,
} from "./result-limits";
export type { EntitySnapshot } from "./entity.types";
export type {
  ParsedDefinition,
  Predicate,
  AndPredicate,
  OrPredicate,
  NotPredicate,
  PropertyPredicate,
  TestActions,
  TestAction,
} from "./definition.types";
export { OPERATORS, type Operator } from "./operators";
export {
  ACTION_TYPES,
  DEFAULT_DEPRECATION_NOTE,
  DEFAULT_OWNERSHIP_TYPE,
  OWNERSHIP_TYPES,
  aspectOfAction,
  type ActionAspect,
} from "./action-catalogue";
export { actionsFromJson } from "./action.parser";
export {
  actionRunsOf,
  planActions,
  type ActionPlan,
  type ActionRun,
  type AspectWrite,
  type PlannedAction,
} from "./action-planner";
export {
  ACTION_ASPECT_PRIVILEGES,
  privilegeOfAction,
  privilegesLacking,
  privilegesOfActions,
  withoutRefused,
  type LackingOf,
  type NotApplied,
  type WithheldOf,
} from "./action-privileges";
export { annotateActions } from "./action-annotations";
