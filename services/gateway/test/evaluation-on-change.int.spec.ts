/**
 * Evaluation on change (docs/evaluation-on-change.md) against the real gateway over HTTP and GraphQL, a real evaluation worker
 * (its pool, pusher and BullMQ worker) in process, real PostgreSQL and Redis: an ingested change has the tests that
 * select the entity pushed by themselves, written for the test's owner; a test with evaluateOnChange off is left out,
 * and turning it on runs it over what it selects; rapid changes to one entity coalesce into one evaluation; a worker
 * that dies between the commit and the evaluation leaves the change to the next one (Redis is not on that path: the
 * outbox and the cursor are PostgreSQL's); a burst is worked through a bounded batch at a time; a test whose owner
 * lost MANAGE_TESTS is suspended and pushes nothing.
 */
import { eventually } from "@mdp/core/testing";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const MANAGER = "urn:li:corpuser:onchange-manager";
const INGESTER = "urn:li:corpuser:onchange-ingester";
const LEAVER = "urn:li:corpuser:onchange-leaver";
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
  stamps: Record<string, { version: number; created: { actor: string } }>;
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
  const settle = async (on = worker) => {
    const done = { events: 0, entities: 0, pushed: 0, runs: 0, refused: 0 };
    for (;;) {
      const pass = await on.onChange.pass();
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

  it("pushes the results of an ingested change by itself, written for the test's owner, not the writer", async () => {
    const orders = dataset("orders");
    const loop = worker.startOnChange(50);
    try {
      await describeAs(orders, "All orders");
      await eventually("the change's result is pushed", () => resultOf(orders, onTest), {
        until: (r) => r === "passing",
      });
      const stamp = (await entity(orders)).stamps.testResults!;
      expect(stamp.created.actor).toBe(MANAGER);
      await describeAs(orders, "nothing to see");
      await eventually("the next change's result is pushed", () => resultOf(orders, onTest), {
        until: (r) => r === "failing",
      });
    } finally {
      await loop.stop();
    }
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

  it("coalesces rapid changes to one entity into one evaluation of its latest state", async () => {
    const customers = dataset("customers");
    await describeAs(customers, "no");
    await settle();
    const versionBefore = (await entity(customers)).stamps.testResults!.version;
    for (const description of ["a", "b", "c", "d", "orders of customers"]) await describeAs(customers, description);
    // Five changes (and the push's own testResults event, which evaluates nothing): one evaluation, one new version.
    const done = await settle();
    expect(done).toMatchObject({ entities: 1, pushed: 1 });
    expect(done.events).toBeGreaterThanOrEqual(5);
    expect(await resultOf(customers, onTest)).toBe("passing");
    expect((await entity(customers)).stamps.testResults!.version).toBe(versionBefore + 1);
  });

  it("queues a burst: each pass takes a bounded batch of events, and the rest wait for the next, none lost", async () => {
    const small = await startEvaluationWorker(h, 2, { onChange: { batchSize: 3 } });
    try {
      const burst = Array.from({ length: 7 }, (_, i) => dataset(`burst${i}`));
      const proposals = burst.map((urn) => ({
        entityType: "dataset",
        entityUrn: urn,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: "orders" }) },
      }));
      const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, systemClientHeaders(INGESTER));
      expect(res.status).toBe(200);
      expect(await small.onChange.pass()).toMatchObject({ events: 3, entities: 3 });
      expect(await resultOf(burst[3]!, onTest)).toBeUndefined();
      expect(await settle(small)).toMatchObject({ entities: 4 });
      for (const urn of burst) expect(await resultOf(urn, onTest)).toBe("passing");
    } finally {
      await small.close();
    }
  });

  it("evaluates a change committed before its worker died, once a worker is back", async () => {
    const refunds = dataset("refunds");
    // This worker dies in the pass, after evaluating and before its commit (a test edit in the same pass needs it
    // to start a run, and it cannot).
    const dying = await startEvaluationWorker(h, 2, {
      onChange: { startRun: () => Promise.reject(new Error("the worker died")) },
    });
    try {
      await describeAs(refunds, "orders refunded");
      const edited = await createTest("edited-meanwhile", MANAGER);
      await expect(dying.onChange.pass()).rejects.toThrow("the worker died");
      expect(await resultOf(refunds, onTest)).toBeUndefined();
      expect(await runsOf(edited)).toEqual([]);
    } finally {
      await dying.close();
    }
    const restarted = await startEvaluationWorker(h, 2);
    try {
      expect(await settle(restarted)).toMatchObject({ entities: 1, pushed: 1, runs: 1 });
      expect(await resultOf(refunds, onTest)).toBe("passing");
    } finally {
      await restarted.close();
    }
  });

  it("does not evaluate again on what tests' actions wrote: actions that undo each other settle after one push", async () => {
    // Failing without the tag adds it; passing with it removes it: each push undoes the last. Evaluating again on the
    // actions' own writes would rewrite the entity at every pass, forever.
    await grant(h, MANAGER, ["MANAGE_TESTS", "VIEW_TESTS", "EDIT_ENTITY_TAGS"]);
    const flipper = (
      await gql(
        CREATE,
        {
          input: {
            id: "flipper",
            name: "flipper",
            category: "Quality",
            definition: {
              json: JSON.stringify({
                on: { types: ["dataset"] },
                rules: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:flip"] },
                actions: {
                  passing: [{ type: "REMOVE_TAGS", values: ["urn:li:tag:flip"] }],
                  failing: [{ type: "ADD_TAGS", values: ["urn:li:tag:flip"] }],
                },
              }),
            },
          },
        },
        MANAGER,
      )
    ).createTest as string;
    await settle();
    await eventually("the new test's run ends", () => runsOf(flipper), {
      until: (runs) => runs.length === 1 && runs[0]!.state === "completed",
      timeoutMs: 30_000,
    });
    const flipped = dataset("flipped");
    await describeAs(flipped, "a new dataset");
    for (let pass = 0; pass < 6; pass++) await worker.onChange.pass();
    // One push: failing, the tag added; the write of the tag evaluated nothing again.
    expect(await resultOf(flipped, flipper)).toBe("failing");
    expect((await entity(flipped)).stamps.globalTags?.version).toBe(1);
    expect(await settle()).toMatchObject({ entities: 0 });
  });

  it("counts the runs a test's edits start against its owner's runTest limit: past it, an edit starts none (audited)", async () => {
    const EDITOR = "urn:li:corpuser:onchange-editor";
    await grant(h, EDITOR, ["MANAGE_TESTS", "VIEW_TESTS"]);
    const edited = await createTest("edited-often", EDITOR);
    // Each edit a definition of its own (its own run); the owner's limit is RATE_LIMIT_TEST_RUNS_PER_MINUTE (10).
    for (let i = 0; i < 11; i++) {
      const json = JSON.stringify({
        on: { types: ["dataset"] },
        rules: { property: "datasetProperties.description", operator: "contains_str", value: `edit-${i}` },
      });
      await gql(
        UPDATE,
        { urn: edited, input: { name: "edited-often", category: "Quality", definition: { json } } },
        EDITOR,
      );
      await settle(); // each edit read in a pass of its own (edits read in one pass start one run)
    }
    const limited = await h.prisma.auditEvent.findMany({
      where: { action: "test.run.rateLimited", targetUrn: edited },
    });
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited[0]).toMatchObject({ actorUrn: EDITOR, details: expect.objectContaining({ trigger: "change" }) });
    expect((await runsOf(edited)).length).toBeLessThanOrEqual(h.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE);
  });

  it("suspends a test whose owner lost MANAGE_TESTS, and pushes nothing for it", async () => {
    const policy = (
      await gql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: "leaver", state: "ACTIVE", privileges: ["MANAGE_TESTS"], actors: { users: [LEAVER] } },
      })
    ).createPolicy as string;
    const leavers = await createTest("leavers", LEAVER);
    await settle();
    await eventually("the new test's run ends", () => runsOf(leavers), {
      until: (runs) => runs.length === 1 && runs[0]!.state === "completed",
      timeoutMs: 30_000,
    });
    await gql(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: policy });

    const returns = dataset("returns");
    await describeAs(returns, "orders returned");
    expect(await settle()).toMatchObject({ entities: 1, refused: 1 });
    expect(await resultOf(returns, onTest)).toBe("passing");
    expect(await resultOf(returns, leavers)).toBeUndefined();
    const test = (await gql(TEST, { urn: leavers })).test as { suspendedAt: number | null; suspendedReason: string };
    expect(test.suspendedAt).toEqual(expect.any(Number));
    expect(test.suspendedReason).toContain("MANAGE_TESTS");
    const audited = await h.prisma.auditEvent.findMany({
      where: { action: "test.onChange.suspended", targetUrn: leavers },
    });
    expect(audited).toEqual([expect.objectContaining({ actorUrn: LEAVER })]);
    // Suspended, it is left out from then on: no second audit row, still nothing pushed.
    await describeAs(returns, "orders returned again");
    expect(await settle()).toMatchObject({ entities: 1, refused: 0 });
    expect(await resultOf(returns, leavers)).toBeUndefined();
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
