/**
 * Evaluation on change (docs/evaluation-on-change.md) as the gateway's writes start it, against the real gateway over
 * HTTP and GraphQL, a real evaluation worker in process, real PostgreSQL and Redis: an ingested change is evaluated for
 * the tests that evaluate on change; a test with evaluateOnChange off is left out, and turning it on runs it over what
 * it selects; whoever turns someone else's test on or sets it ACTIVE owns its runs. What the worker does with the
 * changes (pushes as the owner, coalescing, bounded batches, a worker dying mid-pass, actions' writes, the owner's
 * limits and privileges) is tested in the worker alone: services/evaluation-worker/test/on-change.int.spec.ts.
 */
import { eventually } from "@mdp/core/testing";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const MANAGER = "urn:li:corpuser:onchange-manager";
const INGESTER = "urn:li:corpuser:onchange-ingester";
const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.${name},PROD)`;
const DESCRIBED = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
});

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
const TEST = `query($urn: String!) { test(urn: $urn) { evaluateOnChange ownerUrn suspendedAt suspendedReason } }`;

interface Entity {
  aspects: { testResults?: { passing: Array<{ test: string }>; failing: Array<{ test: string }> } };
}

describe("evaluation on change", () => {
  let h: Harness;
  let worker: RunningWorker;
  let onTest: string;

  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) => {
    const body = (await h.graphql(query, variables, systemClientHeaders(actor))).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  const createTest = async (id: string, actor: string, extra: Record<string, unknown> = {}) =>
    (
      await gql(
        CREATE,
        { input: { id, name: id, category: "Quality", definition: { json: DESCRIBED }, ...extra } },
        actor,
      )
    ).createTest as string;
  const describeAs = async (urn: string, description: string, actor = INGESTER) => {
    const proposal = {
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
    };
    const res = await h.post(
      "/gms/aspects?action=ingestProposalBatch",
      { proposals: [proposal] },
      systemClientHeaders(actor),
    );
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const entity = async (urn: string): Promise<Entity> => {
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, {
      headers: systemClientHeaders(ROOT),
    });
    const body = (await res.json()) as { value: Entity };
    if (res.status !== 200) throw new Error(`GET ${urn}: ${res.status} ${JSON.stringify(body)}`);
    return body.value;
  };
  const resultOf = async (urn: string, test: string): Promise<"passing" | "failing" | undefined> => {
    const results = (await entity(urn)).aspects.testResults;
    if (results?.passing.some((r) => r.test === test)) return "passing";
    if (results?.failing.some((r) => r.test === test)) return "failing";
    return undefined;
  };
  /** Evaluation on change until it has caught up with every committed change: what a worker does on its own. */
  const settle = async () => {
    const done = { events: 0, entities: 0, pushed: 0, runs: 0, refused: 0 };
    for (;;) {
      const pass = await worker.onChange.pass();
      if (!pass || pass.events === 0) return done;
      for (const key of Object.keys(done) as Array<keyof typeof done>) done[key] += pass[key];
    }
  };
  const runsOf = async (testUrn: string) =>
    (
      await h.database.pool.query<{ state: string; created_by: string }>(
        "SELECT state, created_by FROM task WHERE type = 'EVALUATE_TESTS' AND request->>'testUrn' = $1",
        [testUrn],
      )
    ).rows;

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
    await grant(h, MANAGER, ["MANAGE_TESTS", "VIEW_TESTS"]);
    await grant(h, INGESTER, ["INGEST_METADATA"]);
    onTest = await createTest("on-change", MANAGER);
    await settle();
  });
  afterAll(async () => {
    await worker.close();
    await h.close();
  });

  it("leaves out a test with evaluateOnChange off; turned on, the test runs over every entity it selects", async () => {
    const offTest = await createTest("off-change", MANAGER, { evaluateOnChange: false });
    expect(await gql(TEST, { urn: offTest })).toEqual({
      test: { evaluateOnChange: false, ownerUrn: MANAGER, suspendedAt: null, suspendedReason: null },
    });
    const items = dataset("items");
    await describeAs(items, "items of orders");
    expect(await settle()).toMatchObject({ entities: 1, runs: 0 });
    expect(await resultOf(items, onTest)).toBe("passing");
    expect(await resultOf(items, offTest)).toBeUndefined();
    expect(await runsOf(offTest)).toEqual([]);

    await gql(
      UPDATE,
      {
        urn: offTest,
        input: { name: "off-change", category: "Quality", definition: { json: DESCRIBED }, evaluateOnChange: true },
      },
      MANAGER,
    );
    expect((await gql(TEST, { urn: offTest })).test).toMatchObject({ evaluateOnChange: true });
    expect(await settle()).toMatchObject({ runs: 1 });
    expect(await runsOf(offTest)).toEqual([expect.objectContaining({ created_by: MANAGER })]);
    await eventually("the run pushes the test's results", () => resultOf(items, offTest), {
      until: (r) => r === "passing",
      timeoutMs: 30_000,
    });
  });

  it("runs someone else's test for the caller who turns it on or sets it ACTIVE: never as its owner or the system actor", async () => {
    // The system client naming no actor creates a test the system actor owns (whose runs nobody rate-limits), and the
    // root user a draft.
    const asSystem = { authorization: systemClientHeaders(ROOT).authorization! };
    const systems = (
      await h.graphql(
        CREATE,
        {
          input: {
            id: "system-made",
            name: "system-made",
            category: "Quality",
            definition: { json: DESCRIBED },
            evaluateOnChange: false,
          },
        },
        asSystem,
      )
    ).body.data!.createTest as string;
    const draft = await createTest("root-draft", ROOT, { state: "INACTIVE" });
    await settle();
    expect(await runsOf(systems)).toEqual([]);
    expect(await runsOf(draft)).toEqual([]);

    const input = (id: string, more: Record<string, unknown>) => ({
      input: { name: id, category: "Quality", definition: { json: DESCRIBED }, ...more },
    });
    await gql(UPDATE, { urn: systems, ...input("system-made", { evaluateOnChange: true }) }, MANAGER);
    await gql(UPDATE, { urn: draft, ...input("root-draft", { state: "ACTIVE" }) }, MANAGER);
    expect(await settle()).toMatchObject({ runs: 2 });
    for (const urn of [systems, draft]) {
      expect((await runsOf(urn)).map((r) => r.created_by)).toEqual([MANAGER]);
      expect((await gql(TEST, { urn })).test).toMatchObject({ ownerUrn: MANAGER });
      const runs = await h.prisma.auditEvent.findMany({ where: { action: "test.run", targetUrn: urn } });
      expect(runs).toEqual([
        expect.objectContaining({ actorUrn: MANAGER, details: expect.objectContaining({ trigger: "change" }) }),
      ]);
    }
  });
});
