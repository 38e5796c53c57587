/**
 * What changed since the last run against the real gateway over GraphQL, a real evaluation worker
 * (BullMQ, its thread pool), real PostgreSQL and Redis: each runTest that pushes records the entities newly failing,
 * newly passing and flapping compared with the test's previous run; testRunDiff reads a run's diff or the latest;
 * lists are cut at their limit with the whole count; a run without push records none; retention prunes them.
 */
import { eventually } from "@mdp/core/testing";
import { inTransaction, openRunDiff } from "@mdp/db";
import { TestHistoryRetention } from "evaluation-worker";
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
  const urns = (list: Entities) => list.entities.map((e) => e.urn);

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
  });

  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("lists per run what newly fails, newly passes and flaps, compared with the test's previous run", async () => {
    await describe_([
      [A, "abc", "all orders"],
      [B, "abc", "nothing"],
      [C, "abc", "orders again"],
    ]);
    await createTest(TEST, "abc");

    // The first run: every result is new (compared with none), so each entity is in one list, previousType null.
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

    // Between runs A breaks and B is fixed; C stays. The second run lists only those two, against the first run.
    await describe_([
      [A, "abc", "nothing"],
      [B, "abc", "orders now"],
    ]);
    const second = await run(TEST);
    const two = await diff(TEST, second);
    expect(two).toMatchObject({
      previousRunId: first,
      evaluated: 3,
      newlyFailing: { total: 1, entities: [{ urn: A, type: "FAILURE", previousType: "SUCCESS" }] },
      newlyPassing: { total: 1, entities: [{ urn: B, type: "SUCCESS", previousType: "FAILURE" }] },
      flapping: { total: 0 },
    });
    expect(two.baselineAt).toBe(one.lastBatchAt);
    // The first run's diff is still there as it was.
    expect(await diff(TEST, first)).toEqual(one);

    // C breaks between the second and third runs.
    await describe_([[C, "abc", "nothing"]]);
    const third = await diff(TEST, await run(TEST));
    expect(third.previousRunId).toBe(second);
    expect(third.newlyFailing.entities).toEqual([{ urn: C, type: "FAILURE", previousType: "SUCCESS" }]);
    expect(third.newlyPassing.total).toBe(0);

    // A flips back and forth: passing again, then failing again. Its changes since the window's start (the first of
    // the last TEST_RUN_DIFF_FLAP_RUNS = 5 runs) are more than TEST_RUN_DIFF_FLAP_CHANGES (2), so it flaps.
    await describe_([
      [A, "abc", "orders"],
      [C, "abc", "orders"],
    ]);
    const fourth = await run(TEST);
    await describe_([[A, "abc", "no"]]);
    const fifth = await run(TEST);
    const five = await diff(TEST, fifth);
    expect(five.previousRunId).toBe(fourth);
    expect(five.newlyFailing.entities).toEqual([{ urn: A, type: "FAILURE", previousType: "SUCCESS" }]);
    // A: first result, then fail (2nd run), pass (4th), fail (5th): 3 changes; C: fail (3rd), pass (4th): 2.
    expect(five.flapping).toEqual({
      total: 1,
      truncated: false,
      entities: [{ urn: A, type: "FAILURE", changes: 3 }],
    });
    // Without runId: the latest run.
    expect((await diff(TEST)).runId).toBe(fifth);
  });

  it("cuts a long list at 100 entities, saying so with the whole count", async () => {
    const many = Array.from({ length: 105 }, (_, i) => dataset(`many${String(i).padStart(3, "0")}`));
    await describe_(many.map((urn) => [urn, "many", "undocumented"] as [string, string, string]));
    const test = "urn:li:test:many-described";
    await createTest(test, "many");
    const runId = await gql(`mutation { runTest(urn: "${test}", push: true, batchSize: 50) }`, {});
    const taskId = runId.data?.runTest as string;
    const d = await eventually("the run's diff over every entity", () => diff(test, taskId).catch(() => undefined), {
      timeoutMs: 30_000,
      until: (v) => v?.evaluated === 105,
    });
    expect(d!.newlyFailing.total).toBe(105);
    expect(d!.newlyFailing.truncated).toBe(true);
    expect(urns(d!.newlyFailing)).toEqual(many.slice(0, 100));
    expect(d!.newlyPassing).toEqual({ total: 0, truncated: false, entities: [] });
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

  it("keeps the last TEST_RUN_DIFF_MAX_RUNS runs of a test: a run that starts deletes the oldest beyond it", async () => {
    const test = "urn:li:test:capped";
    const open = (runId: string, at: number) =>
      inTransaction(h.database.pool, (client) =>
        openRunDiff(client, { runId, testUrn: test, at: new Date(at), flapChanges: 2, flapRuns: 5, maxRuns: 2 }),
      );
    await open("capped-1", 1_000);
    await open("capped-2", 2_000);
    const third = await open("capped-3", 3_000);
    // Compared with the run before it, which had no batch yet: its start.
    expect(third).toMatchObject({ previousRunId: "capped-2", baselineAt: new Date(2_000), flapSince: new Date(1_000) });
    const kept = await h.database.pool.query<{ run_id: string }>(
      "SELECT run_id FROM test_run_diff WHERE test_urn = $1 ORDER BY started_at",
      [test],
    );
    expect(kept.rows.map((r) => r.run_id)).toEqual(["capped-2", "capped-3"]);
  });

  it("prunes run diffs older than the history's retention with the history", async () => {
    const runId = await run(TEST);
    await h.database.pool.query(`UPDATE test_run_diff SET started_at = now() - interval '400 days' WHERE run_id = $1`, [
      runId,
    ]);
    const retention = new TestHistoryRetention(h.database.pool, 365);
    await retention.prune();
    const body = await gql(DIFF, { testUrn: TEST, runId });
    expect(body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
  });
});
