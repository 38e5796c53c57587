/**
 * A push acts with its caller's authority, never the owner's, against the real gateway over HTTP and GraphQL, a real
 * evaluation worker in process and real PostgreSQL and Redis. Whoever pushes a test it does not own — evaluate or
 * batchEvaluate with push: true, runTest, runTests — has its actions write only what both the caller (through the
 * token it called with) and the test's owner may write now; the rest is left out, listed with missingPrivilege in
 * the answer and audited as test.actions.refused by the caller. An INACTIVE test's actions run for its owner alone.
 * The owner's own push is unchanged.
 */
import { eventually } from "@mdp/core/testing";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import {
  bearer,
  createToken,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const DATASET = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.push_${name},PROD)`;
const PUSHER = "urn:li:corpuser:push-manager";
const TAGGER = "urn:li:corpuser:push-tagger";
const EDITOR = "urn:li:corpuser:push-editor";
const ANN = "urn:li:corpuser:ann";
const STEWARDS = "urn:li:corpGroup:stewards";
const NEEDS_DOC = "urn:li:tag:needs-doc";
const ROOTS_TEST = "urn:li:test:roots-tag-and-own";
const DRAFT = "urn:li:test:roots-draft";

/** Fails without a description, and then tags the dataset (EDIT_ENTITY_TAGS) and adds an owner (EDIT_ENTITY_OWNERS). */
const TAG_AND_OWN = JSON.stringify({
  on: { types: ["dataset"] },
  rules: [{ property: "datasetProperties.description", operator: "exists" }],
  actions: {
    failing: [
      { type: "ADD_TAGS", values: [NEEDS_DOC] },
      { type: "ADD_OWNERS", values: [STEWARDS] },
    ],
  },
});

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;

interface Action {
  type: string;
  params: Record<string, string[]>;
  wouldChange: boolean;
  missingPrivilege?: string;
  notApplied?: string;
}
interface Evaluation {
  failing: Array<{ test: string; actions?: Action[] }>;
}

const TAG = { type: "ADD_TAGS", params: { values: [NEEDS_DOC] } };
const OWN = { type: "ADD_OWNERS", params: { values: [STEWARDS] } };
const INGESTED_TAGS = { tags: [{ tag: "urn:li:tag:finance" }] };
const INGESTED_OWNERS = { owners: [{ owner: ANN, type: "TECHNICAL_OWNER" }] };

describe("a push runs a test's actions with its caller's authority", () => {
  let h: Harness;
  let worker: RunningWorker;
  const asRoot = systemClientHeaders(ROOT);
  let asPusher: Record<string, string>;
  let asTagger: Record<string, string>;
  let asEditor: Record<string, string>;

  const gql = async (query: string, variables: Record<string, unknown>, headers = asRoot) => {
    const body = (await h.graphql(query, variables, headers)).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  /** An undocumented dataset with a tag and an owner of its own: every test here fails it. */
  const ingestUndocumented = async (...urns: string[]) => {
    const proposal = (entityUrn: string, aspectName: string, value: unknown) => ({
      entityType: "dataset",
      entityUrn,
      aspectName,
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify(value) },
    });
    const proposals = urns.flatMap((urn) => [
      proposal(urn, "datasetProperties", { name: urn }),
      proposal(urn, "globalTags", INGESTED_TAGS),
      proposal(urn, "ownership", INGESTED_OWNERS),
    ]);
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, asRoot);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const evaluate = async (urn: string, push: boolean, testUrns: string[], headers: Record<string, string>) => {
    const res = await h.post("/gms/test?action=evaluate", { urn, push, testUrns }, headers);
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
    return res.body.value as Evaluation;
  };
  /** The latest stored value of each aspect actions write, and the testResults. */
  const latest = async (urn: string) => {
    const { rows } = await h.database.pool.query<{ aspect_name: string; value: unknown; created_by: string }>(
      `SELECT DISTINCT ON (aspect_name) aspect_name, value, created_by FROM aspect
        WHERE urn = $1 AND aspect_name IN ('globalTags', 'ownership', 'testResults')
        ORDER BY aspect_name, version DESC`,
      [urn],
    );
    return Object.fromEntries(rows.map((r) => [r.aspect_name, { value: r.value, by: r.created_by }]));
  };
  /** Whether the tags and owners are as ingested: no action wrote them. */
  const untouched = async (urn: string) => {
    const after = await latest(urn);
    expect(after.globalTags?.value).toEqual(INGESTED_TAGS);
    expect(after.ownership?.value).toEqual(INGESTED_OWNERS);
  };
  const refusals = async (testUrn: string, actorUrn: string) =>
    (
      await h.prisma.auditEvent.findMany({ where: { action: "test.actions.refused", targetUrn: testUrn, actorUrn } })
    ).map((e) => e.details);
  const runToEnd = async (testUrn: string, headers: Record<string, string>) => {
    const taskId = (await gql(`mutation($urn: String!) { runTest(urn: $urn) }`, { urn: testUrn }, headers))
      .runTest as string;
    const ended = await eventually(
      "the run ended",
      async () =>
        (await h.post("/gms/operations?action=getTaskStatus", { taskId }, asRoot)).body.value as { state: string },
      { timeoutMs: 30_000, until: (status) => status.state === "completed" || status.state === "failed" },
    );
    expect(ended).toMatchObject({ state: "completed" });
    return taskId;
  };

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
    // Each acts through a token of its own, as a client would: the token's bounds are the push's.
    await grant(h, PUSHER, ["MANAGE_TESTS"]);
    await grant(h, TAGGER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    await grant(h, EDITOR, ["MANAGE_TESTS", "INGEST_METADATA"]);
    asPusher = bearer((await createToken(h, PUSHER)).token);
    asTagger = bearer((await createToken(h, TAGGER)).token);
    asEditor = bearer((await createToken(h, EDITOR)).token);
    for (const [id, state] of [
      ["roots-tag-and-own", "ACTIVE"],
      ["roots-draft", "INACTIVE"],
    ]) {
      // evaluateOnChange off: nothing but the pushes below evaluates them (no run over what they select).
      await gql(CREATE, {
        input: { id, name: id, category: "Docs", definition: { json: TAG_AND_OWN }, state, evaluateOnChange: false },
      });
    }
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("evaluate with push: true by a MANAGE_TESTS holder writes none of the root user's actions, and says why", async () => {
    const urn = DATASET("evaluated");
    await ingestUndocumented(urn);
    const missing = [
      { ...TAG, wouldChange: false, missingPrivilege: "EDIT_ENTITY_TAGS" },
      { ...OWN, wouldChange: false, missingPrivilege: "EDIT_ENTITY_OWNERS" },
    ];
    // The dry view says the same of what its push would do.
    expect((await evaluate(urn, false, [ROOTS_TEST], asPusher)).failing[0]!.actions).toEqual(missing);
    const pushed = await evaluate(urn, true, [ROOTS_TEST], asPusher);
    expect(pushed.failing[0]!.actions).toEqual(missing);
    // The results are pushed (the caller may push them), the actions are not.
    const after = await latest(urn);
    expect(after.testResults).toMatchObject({
      value: { failing: [expect.objectContaining({ test: ROOTS_TEST })] },
      by: PUSHER,
    });
    await untouched(urn);
    expect(await refusals(ROOTS_TEST, PUSHER)).toEqual([
      {
        owner: ROOT,
        missingPrivileges: ["EDIT_ENTITY_OWNERS", "EDIT_ENTITY_TAGS"],
        actions: ["ADD_OWNERS", "ADD_TAGS"],
        entities: 1,
        via: "test-action",
      },
    ]);
    expect(await h.prisma.auditEvent.count({ where: { action: "test.actions", targetUrn: urn } })).toBe(0);

    // batchEvaluate likewise.
    const batched = DATASET("batched");
    await ingestUndocumented(batched);
    const res = await h.post(
      "/gms/test?action=batchEvaluate",
      { urns: [batched], push: true, testUrns: [ROOTS_TEST] },
      asPusher,
    );
    expect(res.status).toBe(200);
    await untouched(batched);
  });

  it("runTest and runTests by a MANAGE_TESTS holder write none of the root user's actions either", async () => {
    const [run, runs] = [DATASET("run"), DATASET("runs")];
    await ingestUndocumented(run, runs);
    const taskId = await runToEnd(ROOTS_TEST, asPusher);
    expect(await h.prisma.task.findUnique({ where: { id: taskId } })).toMatchObject({ createdBy: PUSHER });
    expect((await latest(run)).testResults).toMatchObject({ by: PUSHER });
    await untouched(run);

    const before = (await refusals(ROOTS_TEST, PUSHER)).length;
    const ran = await gql(`mutation($urn: String!) { runTests(urn: $urn) }`, { urn: runs }, asPusher);
    expect(ran.runTests).toBe(false);
    expect((await latest(runs)).testResults).toMatchObject({ by: PUSHER });
    await untouched(runs);
    expect((await refusals(ROOTS_TEST, PUSHER)).length).toBeGreaterThan(before);
  });

  it("applies what the caller may write too: a holder of EDIT_ENTITY_TAGS tags, and adds no owner", async () => {
    const urn = DATASET("tagged");
    await ingestUndocumented(urn);
    const pushed = await evaluate(urn, true, [ROOTS_TEST], asTagger);
    expect(pushed.failing[0]!.actions).toEqual([
      { ...TAG, wouldChange: true },
      { ...OWN, wouldChange: false, missingPrivilege: "EDIT_ENTITY_OWNERS" },
    ]);
    const after = await latest(urn);
    expect(after.globalTags).toEqual({
      value: { tags: [...INGESTED_TAGS.tags, { tag: NEEDS_DOC }] },
      by: TAGGER,
    });
    expect(after.ownership?.value).toEqual(INGESTED_OWNERS);
    expect(await refusals(ROOTS_TEST, TAGGER)).toEqual([
      expect.objectContaining({ owner: ROOT, missingPrivileges: ["EDIT_ENTITY_OWNERS"], actions: ["ADD_OWNERS"] }),
    ]);

    // Its token bounds the push as it bounds a request: scoped to MANAGE_TESTS, it tags nothing.
    const scoped = bearer((await createToken(h, TAGGER, asRoot, { scopes: ["MANAGE_TESTS"] })).token);
    const other = DATASET("scoped");
    await ingestUndocumented(other);
    expect((await evaluate(other, true, [ROOTS_TEST], scoped)).failing[0]!.actions).toEqual([
      { ...TAG, wouldChange: false, missingPrivilege: "EDIT_ENTITY_TAGS" },
      { ...OWN, wouldChange: false, missingPrivilege: "EDIT_ENTITY_OWNERS" },
    ]);
    await untouched(other);

    // The owner's own push is as it was: everything the owner may write.
    const owners = DATASET("owners-push");
    await ingestUndocumented(owners);
    expect((await evaluate(owners, true, [ROOTS_TEST], asRoot)).failing[0]!.actions).toEqual([
      { ...TAG, wouldChange: true },
      { ...OWN, wouldChange: true },
    ]);
    expect((await latest(owners)).ownership?.value).toMatchObject({
      owners: [...INGESTED_OWNERS.owners, { owner: STEWARDS, type: "TECHNICAL_OWNER" }],
    });
  });

  it("runs an INACTIVE test's actions for its owner alone: anyone else's push applies none, whatever it holds", async () => {
    const urn = DATASET("drafted");
    await ingestUndocumented(urn);
    // The editor holds every privilege the actions need (INGEST_METADATA), yet the draft is not its to act for.
    const pushed = await evaluate(urn, true, [DRAFT], asEditor);
    expect(pushed.failing[0]!.actions).toEqual([
      { ...TAG, wouldChange: false, notApplied: "INACTIVE" },
      { ...OWN, wouldChange: false, notApplied: "INACTIVE" },
    ]);
    expect((await latest(urn)).testResults).toMatchObject({ by: EDITOR });
    await untouched(urn);
    await runToEnd(DRAFT, asEditor);
    await untouched(urn);
    // Not a refusal of a privilege: nothing is audited as one.
    expect(await refusals(DRAFT, EDITOR)).toEqual([]);

    // The owner's push applies them.
    expect((await evaluate(urn, true, [DRAFT], asRoot)).failing[0]!.actions).toEqual([
      { ...TAG, wouldChange: true },
      { ...OWN, wouldChange: true },
    ]);
    expect((await latest(urn)).globalTags).toEqual({
      value: { tags: [...INGESTED_TAGS.tags, { tag: NEEDS_DOC }] },
      by: ROOT,
    });
  });
});
