import type { MetadataTest } from "@mdp/db";
import { normalizedDefinitionText, type ParsedDefinition } from "@mdp/metadata-tests";
import type { GraphQLContext } from "../graphql/context";
import { needs, resolver } from "../graphql/resolver";
import { listTestsArgs, testArgs, validateArgs } from "./metadata-test-contracts";
import { SCHEDULE_PRIVILEGES } from "@mdp/core";
import { runTestArgs } from "./test-run.service";
import { runTestsArgs } from "./definition-run.service";

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

  "Runs the test by itself: runTest with push, on a cron pattern evaluated in UTC."
  input TestScheduleInput {
    """
    5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), as BullMQ's job schedulers read them;
    firing at most once every SCHEDULE_MIN_INTERVAL_SECONDS (60 by default).
    """
    cron: String!
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
    "Default none: the test runs only when evaluated or run."
    schedule: TestScheduleInput
    """
    Default true: a change of an entity the test selects re-evaluates it and pushes the result by itself, and the new
    test is run over every entity it selects (a runTest task for its owner). false: explicit and scheduled runs only.
    """
    evaluateOnChange: Boolean
  }

  input UpdateTestInput {
    name: String!
    category: String!
    description: String
    definition: TestDefinitionInput!
    """
    Unchanged when absent. ACTIVE on an INACTIVE or suspended test starts its work again: the caller becomes its owner
    (it must hold MANAGE_TESTS and what its actions write).
    """
    state: TestState
    "Unchanged when absent; null removes the schedule."
    schedule: TestScheduleInput
    """
    Unchanged when absent. See CreateTestInput.evaluateOnChange. Turning it on makes the caller the owner, as
    setting the test ACTIVE does.
    """
    evaluateOnChange: Boolean
  }

  type TestDefinition {
    "The definition as it was written."
    json: String!
    "The normalized definition (canonical keys, legacy aliases resolved), as JSON."
    normalized: String!
  }

  type TestSchedule {
    cron: String!
    "When it fires next (epoch ms, from its job scheduler); null while it has none or Redis cannot say."
    nextRunAt: Long
    """
    When the schedule was suspended (epoch ms): its owner no longer held what its runs need, or revokeActorAccess.
    While set, firings start nothing; resumeTestSchedule (or an update that sets the schedule or definition) clears it.
    """
    suspendedAt: Long
    "Why it was suspended."
    suspendedReason: String
    """
    Slots of its cron that could not run: Redis lost its job scheduler (a restart without persistence, a failover)
    across them. The latest slot that passed meanwhile ran once, late; only the ones before it count here.
    """
    missedRuns: Int!
    "When the latest such gap ended (epoch ms): the slot that then ran late."
    lastMissedAt: Long
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
    "Null when the test has no schedule. Runs are ordinary runTest tasks (push, batchSize 1000) created by ownerUrn."
    schedule: TestSchedule
    createdBy: String!
    """
    Whom its deferred work acts for (schedule firings, evaluation on change, actions): whoever last set its definition
    or schedule, set it ACTIVE, turned evaluateOnChange on, or resumed it. Each firing uses the owner's privileges as
    they are then.
    """
    ownerUrn: String!
    """
    Whether a change of an entity it selects re-evaluates it and pushes the result by itself (for ownerUrn, with its
    privileges as they are then), and an edit of its definition re-evaluates every entity it selects.
    """
    evaluateOnChange: Boolean!
    """
    When its deferred work (schedule firings, evaluation on change) was suspended (epoch ms): its owner no longer held
    what it needs, or revokeActorAccess. resumeTestSchedule, or an update that takes it over (sets its definition or
    schedule, or sets it ACTIVE), clears it.
    """
    suspendedAt: Long
    "Why it was suspended."
    suspendedReason: String
    createdAt: Long!
    updatedAt: Long!
    "How many entities pass and fail the test now, as their pushed results say (DataHub's TestResultsSummary)."
    results: TestResultsSummary!
    """
    The test's completed runs that pushed their results (runTest and scheduled firings), newest first, that finished
    in [startTimeMillis, endTimeMillis): by default the 90 days up to now, at most 90 days; limit 1 to 100 (default 20).
    """
    batchRunEvents(startTimeMillis: Long, endTimeMillis: Long, limit: Int): BatchTestRunEventsResult
  }

  "A summary of the latest passing and failing entities for a given test."
  type TestResultsSummary {
    "The number of entities passing the test."
    passingCount: Long!
    "The number of entities failing the test."
    failingCount: Long!
  }

  "Result returned when fetching batch run events for a Metadata Test."
  type BatchTestRunEventsResult {
    batchRunEvents: [BatchTestRunEvent!]!
  }

  "A completed run of the test over every entity it selects."
  type BatchTestRunEvent {
    "When the run completed (epoch ms)."
    timestampMillis: Long!
    status: BatchTestRunStatus!
    "The run's counts."
    result: BatchTestRunResult
  }

  enum BatchTestRunStatus {
    "The run has completed."
    COMPLETE
  }

  "The result of a run of the test."
  type BatchTestRunResult {
    "Entities that passed the test in the run."
    passingCount: Long!
    "Entities that failed the test in the run."
    failingCount: Long!
  }

  "Whether a definition would be accepted, and why not (validateTest)."
  type TestValidationResult {
    isValid: Boolean
    "Each problem as <where>: <what>; empty when valid."
    messages: [String!]
  }

  enum RunTestDefinitionStatus {
    "The entity passes the definition."
    PASS
    "The entity fails the definition."
    FAIL
    "The definition's on clause does not select the entity."
    NONE
  }

  type RunTestDefinitionResult {
    status: RunTestDefinitionStatus!
  }

  enum TestEvaluationMode {
    "Evaluate only: nothing is written."
    EVALUATE_ONLY
    """
    The default: evaluate, and apply the definition's actions to the entity for the caller (MANAGE_TESTS and each
    action's privilege). No result is stored for a definition that is not a saved test.
    """
    DEFAULT
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

  extend type Query {
    "A metadata test, or null when there is none. Needs VIEW_TESTS."
    test("The test's urn, urn:li:test:<id>." urn: String!): Test
    "Metadata tests, oldest first; query matches name, category or description, ignoring case. Needs VIEW_TESTS."
    listTests("The page (start, count) and an optional text to match." input: ListTestsInput!): ListTestsResult!
    "Whether createTest would accept the definition (the same parser and limits); nothing is saved."
    validateTest("The definition, as JSON text." input: TestDefinitionInput!): TestValidationResult
  }

  extend type Mutation {
    "Returns the new test's urn."
    createTest(
      "The test: name, category, definition, and optionally id, description, state, schedule."
      input: CreateTestInput!
    ): String!
    """
    Saves an edited test and returns its urn (previewTestImpact shows what an edit would change first). Setting what it
    does (definition, schedule, ACTIVE, evaluateOnChange on) makes the caller its owner. Needs MANAGE_TESTS.
    """
    updateTest(
      "The test's urn."
      urn: String!
      "Its name, category, description and definition; state, schedule and evaluateOnChange unchanged when absent."
      input: UpdateTestInput!
    ): String!
    "Deletes a test with its schedule; its results stop being shown. Needs MANAGE_TESTS."
    deleteTest("The test's urn." urn: String!): Boolean!
    """
    Evaluates the test against every entity its on clause selects, as a background task; with push (the default)
    the results are stored as each entity's testResults. Returns the task id: follow it with getTaskStatus.
    """
    runTest(
      "The test's urn."
      urn: String!
      "Whether to store the results as the entities' testResults."
      push: Boolean = true
      "Entities evaluated per batch."
      batchSize: Int = 1000
    ): String!
    """
    Resumes a suspended schedule; the caller becomes the test's owner, so it must hold what the runs need
    (MANAGE_TESTS and the privileges the test's actions write) and have room under MAX_SCHEDULES_PER_USER. Returns
    the test's urn; CONFLICT when the schedule is not suspended.
    """
    resumeTestSchedule("The test's urn." urn: String!): String!
    """
    Tries a definition that is not saved against one entity, in the evaluation worker as evaluate runs (its time and
    memory limits): PASS, FAIL, or NONE when its on clause does not select the entity. mode (default DEFAULT) says
    whether its actions are applied to the entity.
    """
    runTestDefinition(
      "The entity to evaluate it against."
      urn: String!
      "The definition to try, as JSON text."
      test: TestDefinitionInput!
      "Whether its actions are applied to the entity (default DEFAULT)."
      mode: TestEvaluationMode
    ): RunTestDefinitionResult!
    """
    Evaluates every ACTIVE test whose on clause selects the entity and pushes the results (evaluate with push: true);
    true when none fails.
    """
    runTests("The entity's urn." urn: String!): Boolean
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
    suspendedAt: (test: MetadataTest) => test.suspendedAt?.getTime() ?? null,
    updatedAt: (test: MetadataTest) => test.updatedAt.getTime(),
    results: (test: MetadataTest, _: unknown, ctx: GraphQLContext) => ctx.services.tests.resultCounts(test.urn),
    batchRunEvents: (test: MetadataTest, args: unknown, ctx: GraphQLContext) =>
      ctx.services.tests.runEvents(test.urn, args),
    schedule: (test: MetadataTest) =>
      test.scheduleCron === null
        ? null
        : {
            urn: test.urn,
            cron: test.scheduleCron,
            suspendedAt: test.suspendedAt?.getTime() ?? null,
            suspendedReason: test.suspendedReason,
          },
  },
  TestSchedule: {
    nextRunAt: (schedule: { urn: string }, _: unknown, ctx: GraphQLContext) =>
      ctx.services.tests.nextRunAt(schedule.urn),
    missedRuns: async (schedule: { urn: string }, _: unknown, ctx: GraphQLContext) =>
      (await ctx.services.tests.scheduleSlot(schedule.urn))?.missedRuns ?? 0,
    lastMissedAt: async (schedule: { urn: string }, _: unknown, ctx: GraphQLContext) =>
      (await ctx.services.tests.scheduleSlot(schedule.urn))?.lastMissedAt?.getTime() ?? null,
  },
  Query: {
    test: resolver({ requires: needs("VIEW_TESTS", "view metadata tests"), args: testArgs }, (s, _actor, args) =>
      s.tests.get(args),
    ),
    listTests: resolver(
      { requires: needs("VIEW_TESTS", "list metadata tests"), args: listTestsArgs },
      (s, _actor, args) => s.tests.list(args),
    ),
    validateTest: resolver(
      { requires: needs("VIEW_TESTS", "validate metadata tests"), args: validateArgs },
      (s, _actor, args) => s.tests.validate(args),
    ),
  },
  Mutation: {
    createTest: resolver(
      { requires: needs("MANAGE_TESTS", "create metadata tests"), args: (s) => s.tests.contracts.create },
      (s, actor, args) => s.tests.create(actor, args),
    ),
    updateTest: resolver(
      { requires: needs("MANAGE_TESTS", "update metadata tests"), args: (s) => s.tests.contracts.update },
      (s, actor, args) => s.tests.update(actor, args),
    ),
    deleteTest: resolver(
      { requires: needs("MANAGE_TESTS", "delete metadata tests"), args: testArgs },
      (s, actor, args) => s.tests.delete(actor, args),
    ),
    // Rate-limited by the test-run service, once the request has passed its checks.
    runTest: resolver({ requires: needs("MANAGE_TESTS", "run metadata tests"), args: runTestArgs }, (s, actor, args) =>
      s.testRuns.run(actor, args),
    ),
    runTestDefinition: resolver(
      {
        requires: needs("MANAGE_TESTS", "try metadata test definitions"),
        args: (s) => s.definitionRuns.runDefinitionArgs,
      },
      (s, actor, args) => s.definitionRuns.runDefinition(actor, args),
    ),
    runTests: resolver(
      { requires: needs("MANAGE_TESTS", "push metadata test results"), args: runTestsArgs },
      (s, actor, args) => s.definitionRuns.runTests(actor, args),
    ),
    resumeTestSchedule: resolver(
      { requires: { privilege: SCHEDULE_PRIVILEGES.SCHEDULED_TEST, to: "resume scheduled tests" }, args: testArgs },
      async (s, actor, args) => (await s.tests.resumeSchedule(actor, args)).urn,
    ),
  },
};
