/** The CLI's GraphQL documents (with-fragments.ts says how they are read): metadata tests: created, read, updated, listed, their results' history, run diffs and impact previews. */

export const CREATE_TEST = /* GraphQL */ `
  mutation CreateTest($input: CreateTestInput!) {
    createTest(input: $input)
  }
`;

export const LIST_TESTS = /* GraphQL */ `
  query ListTests($input: ListTestsInput!) {
    listTests(input: $input) {
      start
      count
      total
      tests {
        urn
        name
        category
        description
        state
        onTypes
        schedule {
          cron
          nextRunAt
          suspendedAt
        }
        createdBy
        ownerUrn
        updatedAt
      }
    }
  }
`;

export const TEST_RESULT_HISTORY = /* GraphQL */ `
  query TestResultHistory($urn: String!, $testUrn: String!, $start: Int, $count: Int) {
    testResultHistory(urn: $urn, testUrn: $testUrn, start: $start, count: $count) {
      start
      count
      total
      transitions {
        type
        previousType
        at
      }
    }
  }
`;

export const TEST_RUN_DIFF = /* GraphQL */ `
  query TestRunDiff($testUrn: String!, $runId: String) {
    testRunDiff(testUrn: $testUrn, runId: $runId) {
      testUrn
      runId
      previousRunId
      startedAt
      baselineAt
      lastBatchAt
      evaluated
      flapChanges
      flapRuns
      flapSince
      newlyFailing {
        ...RunDiffEntities
      }
      newlyPassing {
        ...RunDiffEntities
      }
      flapping {
        ...RunDiffEntities
      }
    }
  }
  fragment RunDiffEntities on TestRunDiffEntities {
    total
    truncated
    entities {
      urn
      type
      previousType
      changes
    }
  }
`;

export const PREVIEW_TEST_IMPACT = /* GraphQL */ `
  query PreviewTestImpact($urn: String!, $json: String!, $sampleSize: Int) {
    previewTestImpact(urn: $urn, definition: { json: $json }, sampleSize: $sampleSize) {
      testUrn
      evaluatedAt
      total
      sampled
      sampleSize
      whole
      passToFail {
        count
        examples
      }
      failToPass {
        count
        examples
      }
      startsApplying
      stopsApplying
      unchangedPassing
      unchangedFailing
      actions {
        on
        type
        params
        entities
        newly
      }
    }
  }
`;

export const TEST = /* GraphQL */ `
  query Test($urn: String!) {
    test(urn: $urn) {
      urn
      name
      category
      description
    }
  }
`;

export const UPDATE_TEST = /* GraphQL */ `
  mutation UpdateTest($urn: String!, $input: UpdateTestInput!) {
    updateTest(urn: $urn, input: $input)
  }
`;
