/**
 * Test actions end to end: the gateway over real HTTP and GraphQL, a real BullMQ evaluation worker, real PostgreSQL.
 * Each action type writes DataHub's aspect once when results are pushed (evaluate with push: true, batchEvaluate,
 * runTest) and nothing when re-run; the dry view (push: false) lists the actions and writes nothing; each change leaves
 * an audit row naming the test; and the writes share the results' transaction: a write PostgreSQL refuses rolls the
 * results back with it.
 */
import { eventually } from "@mdp/core/testing";
import { ROOT } from "./support/gateway-harness";
import {
  NEW,
  BATCHED,
  RUN_1,
  RUN_2,
  BROKEN,
  ANN,
  STEWARDS,
  NEEDS_DOC,
  UNDOCUMENTED,
  QUARANTINE,
  FLAG,
  CLEAR,
  CREATE,
  RUN,
  proposal,
} from "./support/test-actions";
import { startTestActionsHarness } from "./support/test-actions-harness";

describe("test actions", () => {
  const ta = startTestActionsHarness();
  const { asRoot, undocumented, gql, ingest, evaluate, versions, latest, auditOf } = ta;

  it("lists in the dry view what each result's actions would do, and writes nothing", async () => {
    const before = await versions(NEW);
    const evaluation = await evaluate(NEW, false);
    const flag = evaluation.failing.find((r) => r.test === FLAG);
    expect(flag).toEqual(
      expect.objectContaining({
        actions: [
          { type: "ADD_TAGS", params: { values: [NEEDS_DOC] }, wouldChange: true },
          { type: "ADD_GLOSSARY_TERMS", params: { values: [UNDOCUMENTED] }, wouldChange: true },
          { type: "ADD_OWNERS", params: { values: [STEWARDS], ownerType: ["DATA_STEWARD"] }, wouldChange: true },
          { type: "SET_DOMAIN", params: { values: [QUARANTINE] }, wouldChange: true },
          { type: "DEPRECATE", params: { note: ["no description"] }, wouldChange: true },
        ],
      }),
    );
    // CLEAR fails too, and has no failing actions: its result lists none.
    expect(evaluation.failing.find((r) => r.test === CLEAR)).not.toHaveProperty("actions");
    expect(evaluation.passing).toEqual([]);
    expect(await versions(NEW)).toEqual(before);
    expect(await auditOf(NEW)).toEqual([]);
  });

  it("applies each action once on evaluate with push: true, as DataHub's aspects, and changes nothing when re-run", async () => {
    await evaluate(NEW, true);
    const after = await latest(NEW);
    expect(after).toEqual({
      globalTags: { tags: [{ tag: "urn:li:tag:finance" }, { tag: NEEDS_DOC }] },
      glossaryTerms: { terms: [{ urn: UNDOCUMENTED }], auditStamp: { time: expect.any(Number), actor: FLAG } },
      ownership: {
        owners: [
          { owner: ANN, type: "TECHNICAL_OWNER" },
          { owner: STEWARDS, type: "DATA_STEWARD" },
        ],
        lastModified: { time: expect.any(Number), actor: FLAG },
      },
      domains: { domains: [QUARANTINE] },
      deprecation: { deprecated: true, note: "no description", actor: FLAG },
      testResults: expect.objectContaining({ failing: [expect.anything(), expect.objectContaining({ test: FLAG })] }),
    });
    // The entity's own GET shows them, as any ingested aspect.
    const res = await fetch(`${ta.gateway.baseUrl}/gms/entities/${encodeURIComponent(NEW)}`, { headers: asRoot });
    const entity = (await res.json()) as { value: { aspects: Record<string, unknown> } };
    expect(entity.value.aspects.domains).toEqual({ domains: [QUARANTINE] });

    const audit = await auditOf(NEW);
    expect(audit).toEqual([
      {
        actorUrn: ROOT,
        action: "test.actions",
        targetUrn: NEW,
        details: expect.objectContaining({ test: FLAG, outcome: "failing", via: "test-action" }),
      },
    ]);
    expect((audit[0]!.details.actions as Array<{ type: string }>).map((a) => a.type)).toEqual([
      "ADD_TAGS",
      "ADD_GLOSSARY_TERMS",
      "ADD_OWNERS",
      "SET_DOMAIN",
      "DEPRECATE",
    ]);

    // Re-running: no new version of any aspect, no new audit row, and the dry view says nothing would change.
    const stored = await versions(NEW);
    await evaluate(NEW, true);
    expect(await versions(NEW)).toEqual(stored);
    expect(await auditOf(NEW)).toHaveLength(1);
    const again = await evaluate(NEW, false);
    expect(again.failing[0]!.actions!.map((a) => a.wouldChange)).toEqual([false, false, false, false, false]);
  });

  it("takes each mark back through batchEvaluate once the test passes, keeping what others wrote", async () => {
    const batch = async () => {
      const res = await ta.gateway.post(
        "/gms/test?action=batchEvaluate",
        { urns: [BATCHED], push: true, testUrns: [FLAG, CLEAR] },
        asRoot,
      );
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    };
    await batch();
    expect((await latest(BATCHED)).domains).toEqual({ domains: [QUARANTINE] });
    await ingest(proposal(BATCHED, "datasetProperties", { name: "batched", description: "documented now" }));
    await batch();
    const after = await latest(BATCHED);
    expect(after.globalTags).toEqual({ tags: [{ tag: "urn:li:tag:finance" }] });
    expect(after.glossaryTerms).toEqual({ terms: [], auditStamp: { time: expect.any(Number), actor: CLEAR } });
    expect(after.ownership).toEqual({
      owners: [{ owner: ANN, type: "TECHNICAL_OWNER" }],
      lastModified: { time: expect.any(Number), actor: CLEAR },
    });
    expect(after.domains).toEqual({ domains: [] });
    expect(after.deprecation).toEqual({ deprecated: false, note: "", actor: CLEAR });
    expect((await auditOf(BATCHED)).map((e) => [e.details.test, e.details.outcome])).toEqual([
      [CLEAR, "passing"],
      [FLAG, "failing"],
    ]);
    const stored = await versions(BATCHED);
    await batch();
    expect(await versions(BATCHED)).toEqual(stored);
  });

  it("applies them from runTest, to every entity the run pushes", async () => {
    const body = await gql(RUN, { urn: FLAG, push: true });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    const taskId = body.data!.runTest as string;
    const ended = await eventually(
      "runTest's task ended",
      async () =>
        (await ta.gateway.post("/gms/operations?action=getTaskStatus", { taskId }, asRoot)).body.value as {
          state: string;
        },
      { timeoutMs: 30_000, until: (status) => status.state === "completed" || status.state === "failed" },
    );
    expect(ended).toMatchObject({ state: "completed" });
    for (const urn of [RUN_1, RUN_2]) {
      expect((await latest(urn)).deprecation).toEqual({ deprecated: true, note: "no description", actor: FLAG });
      expect(await auditOf(urn)).toEqual([
        expect.objectContaining({ details: expect.objectContaining({ test: FLAG }) }),
      ]);
    }
  });

  it("writes actions in the results' transaction: an action's write PostgreSQL refuses leaves no results either", async () => {
    // A trigger in this test's own database refuses deprecation writes, as a full disk or a broken constraint would.
    await ta.gateway.database.pool.query(`
      CREATE FUNCTION refuse_deprecation() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'deprecation refused for the test'; END $$;
      CREATE TRIGGER refuse_deprecation BEFORE INSERT ON aspect
        FOR EACH ROW WHEN (NEW.aspect_name = 'deprecation') EXECUTE FUNCTION refuse_deprecation();`);
    try {
      // Ingested only now: the runTest above would otherwise have marked it already.
      await ingest(...undocumented(BROKEN));
      const before = await versions(BROKEN);
      const res = await ta.gateway.post(
        "/gms/test?action=evaluate",
        { urn: BROKEN, push: true, testUrns: [FLAG] },
        asRoot,
      );
      expect(res.status).toBe(500);
      // Neither the testResults nor the tags, terms, owners or domain written before the refused write remain.
      expect(await versions(BROKEN)).toEqual(before);
      expect(before.testResults).toBeUndefined();
      expect(await auditOf(BROKEN)).toEqual([]);
    } finally {
      await ta.gateway.database.pool.query(
        "DROP TRIGGER refuse_deprecation ON aspect; DROP FUNCTION refuse_deprecation();",
      );
    }
    await evaluate(BROKEN, true, [FLAG]);
    expect((await latest(BROKEN)).deprecation).toEqual({ deprecated: true, note: "no description", actor: FLAG });
    expect(await auditOf(BROKEN)).toHaveLength(1);
  });

  it("refuses, at createTest, an action whose aspect a selected entity type does not have", async () => {
    const body = await gql(CREATE, {
      input: {
        id: "owners-of-users",
        name: "owners of users",
        category: "Docs",
        definition: {
          json: JSON.stringify({
            on: { types: ["corpuser"] },
            rules: [{ property: "urn", operator: "exists" }],
            actions: { failing: [{ type: "SET_DOMAIN", values: [QUARANTINE] }] },
          }),
        },
      },
    });
    expect(body.errors?.[0]?.message).toBe(
      "Failed to validate test definition: actions.failing[0].type: SET_DOMAIN writes domains, which entity type corpuser does not have",
    );
  });
});
