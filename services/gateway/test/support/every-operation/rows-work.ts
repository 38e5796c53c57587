/** The authorization matrix's rows (principals.ts's `Row`) for the work callers set up: tasks, retention policies, metadata tests. */
import { DEFINITION, ENTITY, gql, testInput, type Row } from "./principals";

export const WORK_ROWS: Row[] = [
  // Tasks
  { operation: "Query.listTasks", needs: "GET_TASK_STATUS", call: gql(`{ listTasks(input: {}) { total } }`) },
  // Retention policies
  {
    operation: "Query.listRetentionPolicies",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`{ listRetentionPolicies(input: {}) { total } }`),
  },
  {
    operation: "Query.retentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`query($u: String!) { retentionPolicy(urn: $u) { urn } }`, (_c, f) => ({ u: f.retentionPolicy })),
  },
  {
    operation: "Mutation.createRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *"}) { urn } }`,
    ),
  },
  {
    operation: "Mutation.updateRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation($u: String!) { updateRetentionPolicy(urn: $u, input: {retainDays: 31}) { urn } }`,
      async (_c, f) => ({ u: await f.freshRetentionPolicy() }),
    ),
  },
  {
    operation: "Mutation.runRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { runRetentionPolicy(urn: $u, dryRun: false) }`, (_c, f) => ({
      u: f.retentionPolicy,
    })),
  },
  {
    operation: "Mutation.deleteRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, async (_c, f) => ({
      u: await f.freshRetentionPolicy(),
    })),
  },
  {
    operation: "Mutation.resumeRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { resumeRetentionPolicy(urn: $u) { urn } }`, (_c, f) => ({
      u: f.retentionPolicy,
    })),
  },
  // Metadata tests
  { operation: "Query.listTests", needs: "VIEW_TESTS", call: gql(`{ listTests(input: {}) { total } }`) },
  {
    operation: "Query.test",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!) { test(urn: $u) { urn } }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Query.testResults",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!) { testResults(urn: $u) { passing { test { urn } } } }`, () => ({ u: ENTITY })),
  },
  {
    operation: "Query.testResultHistory",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!, $t: String!) { testResultHistory(urn: $u, testUrn: $t) { total } }`, (_c, f) => ({
      u: ENTITY,
      t: f.test,
    })),
  },
  {
    operation: "Query.previewTestImpact",
    needs: "MANAGE_TESTS", // as saving the edit (updateTest); a definition without actions needs nothing more
    call: gql(
      `query($t: String!, $j: String!) { previewTestImpact(urn: $t, definition: {json: $j}) { sampled } }`,
      (_c, f) => ({
        t: f.test,
        j: DEFINITION,
      }),
    ),
  },
  {
    operation: "Query.testRunDiff",
    needs: "VIEW_TESTS", // as the test's result history
    call: gql(`query($t: String!) { testRunDiff(testUrn: $t) { runId } }`, (_c, f) => ({ t: f.test })),
  },
  {
    operation: "Mutation.createTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, () => ({ i: testInput() })),
  },
  {
    operation: "Mutation.createTest",
    use: "with a schedule",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, () => ({ i: testInput("0 3 * * *") })),
  },
  {
    operation: "Mutation.updateTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!, $i: UpdateTestInput!) { updateTest(urn: $u, input: $i) }`, async (_c, f) => ({
      u: await f.freshTest(),
      i: testInput("0 4 * * *"),
    })),
  },
  {
    operation: "Mutation.deleteTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { deleteTest(urn: $u) }`, async (_c, f) => ({ u: await f.freshTest() })),
  },
  {
    operation: "Mutation.resumeTestSchedule",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { resumeTestSchedule(urn: $u) }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Mutation.runTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { runTest(urn: $u, push: false) }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Query.validateTest",
    needs: "VIEW_TESTS",
    call: gql(`query($i: TestDefinitionInput!) { validateTest(input: $i) { isValid } }`, () => ({
      i: { json: DEFINITION },
    })),
  },
  {
    operation: "Mutation.runTestDefinition",
    needs: "MANAGE_TESTS",
    call: gql(
      `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t, mode: EVALUATE_ONLY) { status } }`,
      () => ({ u: ENTITY, t: { json: DEFINITION } }),
    ),
  },
  {
    operation: "Mutation.runTestDefinition",
    use: "DEFAULT mode, a definition without actions (writes nothing)",
    needs: "MANAGE_TESTS",
    call: gql(
      `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t) { status } }`,
      () => ({ u: ENTITY, t: { json: DEFINITION } }),
    ),
  },
  {
    operation: "Mutation.runTests",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { runTests(urn: $u) }`, () => ({ u: ENTITY })),
  },
];
