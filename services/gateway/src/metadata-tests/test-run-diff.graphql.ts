import { needs, resolver } from "../graphql/resolver";
import { testRunDiffArgs } from "./test-run-diff.service";

export const testRunDiffTypeDefs = /* GraphQL */ `
  "An entity in a run's diff."
  type TestRunDiffEntity {
    urn: String!
    "Its result after the run."
    type: TestResultType!
    "Its result at the run's baselineAt; null when it had none then (or, in flapping, not given)."
    previousType: TestResultType
    "In flapping: its pass/fail changes since flapSince; null in the other lists."
    changes: Int
  }

  "One list of a run's diff: total is whole; entities are the first in urn order, at most 100 and 64 KiB."
  type TestRunDiffEntities {
    total: Int!
    "True when entities lists fewer than total."
    truncated: Boolean!
    entities: [TestRunDiffEntity!]!
  }

  """
  What one run of a test (runTest with push, or a schedule firing) changed, compared with each entity's result at the
  end of the test's previous run.
  """
  type TestRunDiff {
    testUrn: String!
    "The run's task id (getTaskStatus)."
    runId: String!
    "The run it is compared with; null for the test's first recorded run (compared with the results before it)."
    previousRunId: String
    "Just before its first batch was evaluated (epoch ms)."
    startedAt: Long!
    "Results are compared with each entity's recorded result at this time (epoch ms)."
    baselineAt: Long!
    "When its latest batch was evaluated; the run's diff grows batch by batch while it runs."
    lastBatchAt: Long
    "Entities with a pass or fail result so far."
    evaluated: Int!
    "Failing now; passing, or without a result, at baselineAt."
    newlyFailing: TestRunDiffEntities!
    "Passing now; failing, or without a result, at baselineAt."
    newlyPassing: TestRunDiffEntities!
    "Evaluated in this run and changed more than flapChanges times since flapSince."
    flapping: TestRunDiffEntities!
    "TEST_RUN_DIFF_FLAP_CHANGES when the run started."
    flapChanges: Int!
    "TEST_RUN_DIFF_FLAP_RUNS when the run started: the window spans the test's last flapRuns runs, this one included."
    flapRuns: Int!
    "The start of the oldest run in the window (epoch ms)."
    flapSince: Long!
  }

  extend type Query {
    """
    What a run of the test changed: entities newly failing, newly passing and flapping (VIEW_TESTS). runId is the
    run's task id; absent: the test's latest run. Kept for the last TEST_RUN_DIFF_MAX_RUNS runs of each test, and
    TEST_HISTORY_RETENTION_DAYS.
    """
    testRunDiff(
      "The test's urn."
      testUrn: String!
      "The run's task id; absent: the test's latest run."
      runId: String
    ): TestRunDiff!
  }
`;

export const testRunDiffResolvers = {
  Query: {
    testRunDiff: resolver(
      { requires: needs("VIEW_TESTS", "view metadata test results"), args: testRunDiffArgs },
      (s, _actor, args) => s.testRunDiffs.diff(args),
    ),
  },
};
