/**
 * testRunDiff against the real gateway over GraphQL, a real evaluation worker in process, real PostgreSQL and Redis:
 * a run's diff as the API answers it (result types, previous types, the whole counts, the latest run without runId),
 * and NOT_FOUND for a run that did not push, an unknown run, or a test never run. What the worker records per run
 * (against the previous run, flapping, the cut lists, the runs kept and pruned) is tested in the worker alone:
 * services/evaluation-worker/test/test-run-diff.int.spec.ts.
 */
import { eventually } from "@mdp/core/testing";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,diff.${name},PROD)`;
const A = dataset("a");
const B = dataset("b");
const C = dataset("c");
const TEST = "urn:li:test:orders-described";
const DESCRIBED = (prefix: string) =>
  JSON.stringify({
    on: {
      types: ["dataset"],
      conditions: { property: "datasetProperties.name", operator: "equals", values: [prefix] },
    },
    rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
  });

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const RUN = `mutation($urn: String!, $push: Boolean) { runTest(urn: $urn, push: $push, batchSize: 2) }`;
const DIFF = `query($testUrn: String!, $runId: String) {
  testRunDiff(testUrn: $testUrn, runId: $runId) {
    testUrn runId previousRunId startedAt baselineAt lastBatchAt evaluated flapChanges flapRuns flapSince
    newlyFailing { total truncated entities { urn type previousType } }
    newlyPassing { total truncated entities { urn type previousType } }
    flapping { total truncated entities { urn type changes } }
  }
}`;

interface Entities {
  total: number;
  truncated: boolean;
  entities: Array<{ urn: string; type: string; previousType?: string | null; changes?: number }>;
}
interface Diff {
  testUrn: string;
  runId: string;
  previousRunId: string | null;
  startedAt: number;
  baselineAt: number;
  lastBatchAt: number | null;
  evaluated: number;
  newlyFailing: Entities;
  newlyPassing: Entities;
  flapping: Entities;
}

describe("testRunDiff: what changed since the last run", () => {
  let h: Harness;
  let worker: RunningWorker;

  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) =>
    (await h.graphql(query, variables, systemClientHeaders(actor))).body;
  /** Sets each dataset's name (the test's selector) and description in one ingestion. */
  const describe_ = async (entries: Array<[urn: string, name: string, description: string]>) => {
    const proposals = entries.map(([urn, name, description]) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ name, description }) },
    }));
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const createTest = async (urn: string, selector: string) => {
    const body = await gql(CREATE, {
      input: {
        id: urn.slice("urn:li:test:".length),
        name: urn,
        category: "Docs",
        definition: { json: DESCRIBED(selector) },
      },
    });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
  };
  /** Runs the test to its end; answers the run's id. */
  const run = async (testUrn: string, push = true) => {
    const body = await gql(RUN, { urn: testUrn, push });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    const taskId = body.data?.runTest as string;
    await eventually(
      `run ${taskId} ended`,
      async () => (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as { state: string },
      { timeoutMs: 30_000, until: (status) => status.state === "completed" || status.state === "failed" },
    );
    return taskId;
  };
  const diff = async (testUrn: string, runId?: string) => {
    const body = await gql(DIFF, { testUrn, runId });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data?.testRunDiff as Diff;
  };

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
  });

  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("answers a run's diff with result types and previous types, and the latest run without runId", async () => {
    await describe_([
      [A, "abc", "all orders"],
      [B, "abc", "nothing"],
      [C, "abc", "orders again"],
    ]);
    await createTest(TEST, "abc");
    const first = await run(TEST);
    const one = await diff(TEST, first);
    expect(one).toMatchObject({
      testUrn: TEST,
      runId: first,
      previousRunId: null,
      evaluated: 3,
      newlyPassing: {
        total: 2,
        truncated: false,
        entities: [
          { urn: A, type: "SUCCESS", previousType: null },
          { urn: C, type: "SUCCESS", previousType: null },
        ],
      },
      newlyFailing: { total: 1, truncated: false, entities: [{ urn: B, type: "FAILURE", previousType: null }] },
      flapping: { total: 0, entities: [] },
    });
    await describe_([[A, "abc", "nothing"]]);
    const second = await run(TEST);
    expect(await diff(TEST)).toMatchObject({
      runId: second,
      previousRunId: first,
      newlyFailing: { total: 1, entities: [{ urn: A, type: "FAILURE", previousType: "SUCCESS" }] },
    });
  });

  it("answers NOT_FOUND for a run that did not push, an unknown run, or a test never run", async () => {
    const test = "urn:li:test:never-pushed";
    await createTest(test, "abc");
    const dry = await run(test, false);
    for (const variables of [{ testUrn: test, runId: dry }, { testUrn: test }, { testUrn: TEST, runId: dry }]) {
      const body = await gql(DIFF, variables);
      expect(body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
      expect(body.errors?.[0]?.message).toContain(variables.testUrn);
    }
    const bad = await gql(DIFF, { testUrn: "not a urn" });
    expect(bad.errors?.[0]).toMatchObject({ extensions: { code: "BAD_USER_INPUT" } });
    expect(bad.errors?.[0]?.message).toContain("testUrn");
  });
});
