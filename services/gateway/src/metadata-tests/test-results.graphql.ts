import type { FailedRule } from "@mdp/metadata-tests";
import { needs, resolver } from "../graphql/resolver";
import { entityArgs, testResultHistoryArgs } from "./metadata-test-contracts";

/** An entity's stored test results and the history of each test's result for it: the types, testResults, testResultHistory. */
export const testResultTypeDefs = /* GraphQL */ `
  "A rule that made a test fail, with what it expected and what the entity has."
  type FailedRule {
    "Where the rule sits in the normalized definition, e.g. rules.and[1]."
    path: String!
    property: String!
    operator: String!
    "True when the rule failed by holding inside a not."
    negated: Boolean!
    expected: [String!]
    """
    The values found (at most 20), each as text (JSON for anything but a string), one over 200 characters cut and
    marked; empty for a caller without GET_ENTITY (actualCount still counts them).
    """
    actual: [String!]!
    actualCount: Int!
    message: String!
  }

  type TestResult {
    test: Test
    type: TestResultType!
    "Why a failing test failed; empty for passing ones."
    failedRules: [FailedRule!]!
  }

  "An entity's stored results (pushed by evaluate with push: true, or by runTest)."
  type TestResults {
    passing: [TestResult!]!
    failing: [TestResult!]!
  }

  "A change of a test's pushed result for an entity: its first result, or a pass→fail or fail→pass."
  type TestResultTransition {
    "The result from then on."
    type: TestResultType!
    "The result before; null for the first result recorded."
    previousType: TestResultType
    "When the evaluation that showed it ran (epoch ms)."
    at: Long!
  }

  type TestResultHistory {
    start: Int!
    count: Int!
    "Transitions recorded for the pair (within the history's retention)."
    total: Int!
    "Newest first: the first one's type and at say since when the entity has been passing or failing."
    transitions: [TestResultTransition!]!
  }

  extend type Query {
    "The results stored for an entity; null when none were ever pushed."
    testResults("The entity's urn." urn: String!): TestResults
    """
    The pass/fail changes of one test's pushed results for an entity, newest first (count at most 100). Kept for
    TEST_HISTORY_RETENTION_DAYS, each pair's latest always.
    """
    testResultHistory(
      "The entity's urn."
      urn: String!
      "The test's urn."
      testUrn: String!
      "How many changes to skip."
      start: Int = 0
      "How many changes to return, 1 to 100."
      count: Int = 20
    ): TestResultHistory!
  }
`;

export const testResultResolvers = {
  TestResult: {
    failedRules: (result: { failedRules?: FailedRule[] }) => result.failedRules ?? [],
  },
  FailedRule: {
    actual: (rule: FailedRule) =>
      rule.actual.map((value) => (typeof value === "string" ? value : JSON.stringify(value))),
  },
  Query: {
    testResults: resolver(
      { requires: needs("VIEW_TESTS", "view metadata test results"), args: entityArgs },
      (s, actor, args) => s.tests.results(actor, args),
    ),
    testResultHistory: resolver(
      { requires: needs("VIEW_TESTS", "view metadata test results"), args: testResultHistoryArgs },
      (s, _actor, args) => s.tests.history(args),
    ),
  },
};
