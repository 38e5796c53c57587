/**
 * The gateway and evaluation worker the test actions tests run against (test-actions*.int.spec.ts), with the two
 * tests (flag-undocumented, clear-documented) and the undocumented datasets they act on, set up in beforeAll and
 * closed in afterAll, and the helpers those tests call. Call it once inside a describe.
 */
import { startEvaluationWorker, type RunningWorker } from "./evaluation-worker";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./gateway-harness";
import {
  NEW,
  BATCHED,
  RUN_1,
  RUN_2,
  ANN,
  FLAG,
  CLEAR,
  ACTION_ASPECTS,
  FLAG_DEFINITION,
  CLEAR_DEFINITION,
  CREATE,
  AUDIT,
  type Evaluation,
  proposal,
} from "./test-actions";

export function startTestActionsHarness() {
  const asRoot = systemClientHeaders(ROOT);
  const gql = async (query: string, variables: Record<string, unknown>) =>
    (await ta.gateway.graphql(query, variables, asRoot)).body;
  const ingest = async (...proposals: unknown[]) => {
    const res = await ta.gateway.post("/gms/aspects?action=ingestProposalBatch", { proposals }, asRoot);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  /** Every stored version of the aspects actions write, per aspect: [version, value] newest last. */
  const versions = async (urn: string) => {
    const { rows } = await ta.gateway.database.pool.query<{ aspect_name: string; version: number; value: unknown }>(
      `SELECT aspect_name, version, value FROM aspect
        WHERE urn = $1 AND aspect_name = ANY($2::text[]) ORDER BY aspect_name, version`,
      [urn, [...ACTION_ASPECTS, "testResults"]],
    );
    const byAspect: Record<string, unknown[]> = {};
    for (const r of rows) (byAspect[r.aspect_name] ??= []).push(r.value);
    return byAspect;
  };
  /** A dataset's proposals with a name, a tag and an owner but no description: the flagging test fails it. */
  const undocumented = (urn: string) => [
    proposal(urn, "datasetProperties", { name: urn }),
    proposal(urn, "globalTags", { tags: [{ tag: "urn:li:tag:finance" }] }),
    proposal(urn, "ownership", { owners: [{ owner: ANN, type: "TECHNICAL_OWNER" }] }),
  ];
  const ta = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    worker: undefined as unknown as RunningWorker,
    asRoot,
    undocumented,
    gql,
    ingest,
    evaluate: async (urn: string, push: boolean, testUrns = [FLAG, CLEAR]) => {
      const res = await ta.gateway.post("/gms/test?action=evaluate", { urn, push, testUrns }, asRoot);
      if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
      return res.body.value as Evaluation;
    },
    versions,
    latest: async (urn: string) =>
      Object.fromEntries(Object.entries(await versions(urn)).map(([aspect, values]) => [aspect, values.at(-1)])),
    auditOf: async (urn: string) => {
      const body = await gql(AUDIT, { input: { action: "test.actions", targetUrn: urn, count: 100 } });
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      const page = body.data!.listAuditEvents as { events: Array<Record<string, unknown>> };
      return page.events.map((e) => ({ ...e, details: JSON.parse(e.details as string) as Record<string, unknown> }));
    },
  };

  beforeAll(async () => {
    ta.gateway = await startGateway();
    ta.worker = await startEvaluationWorker(ta.gateway);
    for (const [id, definition] of [
      ["flag-undocumented", FLAG_DEFINITION],
      ["clear-documented", CLEAR_DEFINITION],
    ]) {
      const body = await gql(CREATE, { input: { id, name: id, category: "Docs", definition: { json: definition } } });
      if (body.errors) throw new Error(JSON.stringify(body.errors));
    }
    await ingest(...[NEW, BATCHED, RUN_1, RUN_2].flatMap(undocumented));
  });
  afterAll(async () => {
    await ta.worker?.close();
    await ta.gateway?.close();
  });
  return ta;
}
