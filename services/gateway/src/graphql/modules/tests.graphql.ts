import type { MetadataTest } from "@mdp/db";
import { normalizedDefinitionText, type FailedRule, type ParsedDefinition } from "@mdp/metadata-tests";
import type { GraphQLContext } from "../context";
import type { CreateTestInput, ListTestsInput, TestInput } from "../../metadata-tests/metadata-test.service";
import type { RunTestInput } from "../../metadata-tests/test-run.service";

export const testTypeDefs = /* GraphQL */ `
  "ACTIVE tests run when an entity is evaluated without naming tests; INACTIVE ones only when named."
  enum TestState {
    ACTIVE
    INACTIVE
  }

  enum TestResultType {
    SUCCESS
    FAILURE
  }

  input TestDefinitionInput {
    "The definition, JSON or YAML text: {on: {types, conditions?}, rules, actions?}."
    json: String!
  }

  input CreateTestInput {
    "The test urn becomes urn:li:test:<id>; generated when absent."
    id: String
    name: String!
    category: String!
    description: String
    definition: TestDefinitionInput!
    "Default ACTIVE."
    state: TestState
  }

  input UpdateTestInput {
    name: String!
    category: String!
    description: String
    definition: TestDefinitionInput!
    "Unchanged when absent."
    state: TestState
  }

  type TestDefinition {
    "The definition as it was written."
    json: String!
    "The normalized definition (canonical keys, legacy aliases resolved), as JSON."
    normalized: String!
  }

  type Test {
    urn: String!
    name: String!
    category: String!
    description: String
    state: TestState!
    definition: TestDefinition!
    "The entity types the test applies to, as the entity registry names them."
    onTypes: [String!]!
    createdBy: String!
    createdAt: Long!
    updatedAt: Long!
  }

  input ListTestsInput {
    start: Int = 0
    count: Int = 20
    "Matches name, category or description, ignoring case."
    query: String
  }

  type ListTestsResult {
    start: Int!
    count: Int!
    total: Int!
    tests: [Test!]!
  }

  "A rule that made a test fail, with what it expected and what the entity has."
  type FailedRule {
    "Where the rule sits in the normalized definition, e.g. rules.and[1]."
    path: String!
    property: String!
    operator: String!
    "True when the rule failed by holding inside a not."
    negated: Boolean!
    expected: [String!]
    "The values found (at most 20), each as text (JSON for anything but a string)."
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

  extend type Query {
    test(urn: String!): Test
    listTests(input: ListTestsInput!): ListTestsResult!
    "The results stored for an entity; null when none were ever pushed."
    testResults(urn: String!): TestResults
  }

  extend type Mutation {
    "Returns the new test's urn."
    createTest(input: CreateTestInput!): String!
    updateTest(urn: String!, input: UpdateTestInput!): String!
    deleteTest(urn: String!): Boolean!
    """
    Evaluates the test against every entity its on clause selects, as a background task; with push (the default)
    the results are stored as each entity's testResults. Returns the task id: follow it with getTaskStatus.
    """
    runTest(urn: String!, push: Boolean = true, batchSize: Int = 1000): String!
  }
`;

export const testResolvers = {
  Test: {
    // Re-normalized for display: jsonb keeps keys in its own order, the parser gives them in the documented one.
    definition: (test: MetadataTest) => ({
      json: test.definitionText,
      // Only the parser writes this column (createTest/updateTest), so it holds a ParsedDefinition.
      normalized: normalizedDefinitionText(test.definition as unknown as ParsedDefinition),
    }),
    createdAt: (test: MetadataTest) => test.createdAt.getTime(),
    updatedAt: (test: MetadataTest) => test.updatedAt.getTime(),
  },
  TestResult: {
    failedRules: (result: { failedRules?: FailedRule[] }) => result.failedRules ?? [],
  },
  FailedRule: {
    actual: (rule: FailedRule) =>
      rule.actual.map((value) => (typeof value === "string" ? value : JSON.stringify(value))),
  },
  Query: {
    test: (_: unknown, args: { urn: string }, ctx: GraphQLContext) => ctx.services.tests.get(ctx.actor, args.urn),
    listTests: (_: unknown, args: { input: ListTestsInput }, ctx: GraphQLContext) =>
      ctx.services.tests.list(ctx.actor, args.input),
    testResults: (_: unknown, args: { urn: string }, ctx: GraphQLContext) =>
      ctx.services.tests.results(ctx.actor, args.urn),
  },
  Mutation: {
    createTest: (_: unknown, args: { input: CreateTestInput }, ctx: GraphQLContext) =>
      ctx.services.tests.create(ctx.actor, args.input),
    updateTest: (_: unknown, args: { urn: string; input: TestInput }, ctx: GraphQLContext) =>
      ctx.services.tests.update(ctx.actor, args.urn, args.input),
    deleteTest: (_: unknown, args: { urn: string }, ctx: GraphQLContext) =>
      ctx.services.tests.delete(ctx.actor, args.urn),
    // Rate-limited by the test-run service, once the request has passed its checks.
    runTest: (_: unknown, args: RunTestInput, ctx: GraphQLContext) => ctx.services.testRuns.run(ctx.actor, args),
  },
};
