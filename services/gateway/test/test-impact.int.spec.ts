/**
 * previewTestImpact against the real gateway over GraphQL, a real evaluation worker (BullMQ, its thread pool), real
 * PostgreSQL and Redis: its answer as the API gives it (the whole set's flips and actions, nothing written); it needs
 * what saving the edit needs; without a worker nothing answers it (it never runs in the gateway). How the worker counts
 * (samples, retyped definitions) is tested in the worker alone: services/evaluation-worker/test/preview-test.int.spec.ts.
 */
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,impact.${name},PROD)`;
const BOTH = dataset("both"); // "all orders": passes the current and the edited definition
const ORDERS_ONLY = dataset("orders-only"); // passes the current, would fail the edited one
const ALL_ELSE = dataset("all-else"); // fails the current, would pass the edited one
const NEITHER = dataset("neither"); // fails both
const TEST = "urn:li:test:impact";
const NEEDS_REVIEW = "urn:li:tag:needs-review";
const EDITOR = "urn:li:corpuser:impact-editor"; // MANAGE_TESTS only
const VIEWER = "urn:li:corpuser:impact-viewer"; // VIEW_TESTS only

const containing = (word: string, actions?: unknown) =>
  JSON.stringify({
    on: { types: ["dataset"] },
    rules: { property: "datasetProperties.description", operator: "contains_str", value: word },
    ...(actions !== undefined && { actions }),
  });
const PREVIEW = `query($urn: String!, $json: String!, $sampleSize: Int) {
  previewTestImpact(urn: $urn, definition: {json: $json}, sampleSize: $sampleSize) {
    testUrn total sampled sampleSize whole evaluatedAt
    passToFail { count examples } failToPass { count examples }
    startsApplying stopsApplying unchangedPassing unchangedFailing
    actions { on type params entities newly }
  }
}`;

describe("previewTestImpact: what saving an edited test would change", () => {
  let h: Harness;
  let worker: RunningWorker | undefined;

  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) =>
    (await h.graphql(query, variables, systemClientHeaders(actor))).body;
  const preview = (variables: Record<string, unknown>, actor = ROOT) =>
    gql(PREVIEW, { urn: TEST, ...variables }, actor);
  /** What previews must leave alone: aspects, history, tasks, the test. */
  const written = async () =>
    (
      await h.database.pool.query<{ aspects: number; transitions: number; tasks: number; definition: string }>(
        `SELECT (SELECT count(*)::int FROM aspect) AS aspects,
                (SELECT count(*)::int FROM test_result_transition) AS transitions,
                (SELECT count(*)::int FROM task) AS tasks,
                (SELECT definition_text FROM metadata_test WHERE urn = $1) AS definition`,
        [TEST],
      )
    ).rows[0];

  beforeAll(async () => {
    // A caller who gets no answer waits 3 s (EVALUATE_TIMEOUT_MS), not 30.
    h = await startGateway({ EVALUATE_TIMEOUT_MS: "3000", RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1000" });
    worker = await startEvaluationWorker(h);
    await grant(h, EDITOR, ["MANAGE_TESTS"]);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    const proposals = [
      [BOTH, "all orders"],
      [ORDERS_ONLY, "orders only"],
      [ALL_ELSE, "all else"],
      [NEITHER, "nothing"],
    ].map(([urn, description]) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
    }));
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals });
    expect(res.status).toBe(200);
    const created = await gql(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, {
      i: { id: "impact", name: "Impact", category: "Docs", definition: { json: containing("orders") } },
    });
    expect(created.errors).toBeUndefined();
  });

  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("answers the flips and the actions that would fire over the whole set, writing nothing", async () => {
    const before = await written();
    const actions = { failing: [{ type: "ADD_TAGS", values: [NEEDS_REVIEW] }] };
    const body = await preview({ json: containing("all", actions) });
    expect(body.errors).toBeUndefined();
    expect(body.data?.previewTestImpact).toEqual({
      testUrn: TEST,
      total: 4,
      sampled: 4,
      sampleSize: 1000,
      whole: true,
      evaluatedAt: expect.any(Number),
      passToFail: { count: 1, examples: [ORDERS_ONLY] },
      failToPass: { count: 1, examples: [ALL_ELSE] },
      startsApplying: 0,
      stopsApplying: 0,
      unchangedPassing: 1,
      unchangedFailing: 1,
      // Fails: orders-only (newly) and neither (already failing before).
      actions: [
        { on: "FAILURE", type: "ADD_TAGS", params: JSON.stringify({ values: [NEEDS_REVIEW] }), entities: 2, newly: 1 },
      ],
    });
    // Nothing was stored: no results, history, tags or task, and the test is as it was.
    expect(await written()).toEqual(before);
  });

  it("needs what saving the edit needs, and refuses bad input naming the field and the limit", async () => {
    // MANAGE_TESTS is enough for a definition without actions; one that tags needs EDIT_ENTITY_TAGS as saving it does.
    expect((await preview({ json: containing("all") }, EDITOR)).errors).toBeUndefined();
    const tagging = await preview(
      { json: containing("all", { failing: [{ type: "ADD_TAGS", values: [NEEDS_REVIEW] }] }) },
      EDITOR,
    );
    expect(tagging.errors?.[0]).toMatchObject({ extensions: { code: "FORBIDDEN" } });
    expect(tagging.errors?.[0]?.message).toContain("EDIT_ENTITY_TAGS (for ADD_TAGS)");
    // Reading tests is not editing them.
    const viewer = await preview({ json: containing("all") }, VIEWER);
    expect(viewer.errors?.[0]).toMatchObject({ extensions: { code: "FORBIDDEN" } });

    const tooMany = await preview({ json: containing("all"), sampleSize: 5001 });
    expect(tooMany.errors?.[0]).toMatchObject({
      message: "sampleSize must be a whole number from 1 to 5000",
      extensions: { code: "BAD_USER_INPUT" },
    });
    const invalid = await preview({ json: `{"on": {"types": ["nothing-like-this"]}, "rules": []}` });
    expect(invalid.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    const missing = await gql(PREVIEW, { urn: "urn:li:test:no-such-test", json: containing("all") });
    expect(missing.errors?.[0]).toMatchObject({ extensions: { code: "NOT_FOUND" } });
  });

  it("is evaluated by an evaluation worker, never by the gateway: without one it times out", async () => {
    await worker!.close();
    worker = undefined;
    const started = Date.now();
    const body = await preview({ json: containing("all") });
    expect(body.errors?.[0]).toMatchObject({
      message: "The preview did not finish within 3000 ms.",
      extensions: { code: "GATEWAY_TIMEOUT" },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
  });
});
