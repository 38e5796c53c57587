/**
 * What the gateway's metadata-tests files share: the entities and definitions they evaluate, the GraphQL documents,
 * and `metadataTestsSetup`, a gateway with an evaluation worker in process (real PostgreSQL and Redis) holding those
 * entities, the callers' grants and the tests a file names, with the helpers that call it.
 */
import { startEvaluationWorker, type RunningWorker } from "./evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./gateway-harness";
import { waitForState } from "../../../../test/support/wait-for-state";

export const HIVE = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
export const KAFKA = "urn:li:dataset:(urn:li:dataPlatform:kafka,orders,PROD)";
export const CHART = "urn:li:chart:(looker,orders)";
export const USER = "urn:li:corpuser:ann";
export const VIEWER = "urn:li:corpuser:viewer";
export const MANAGER = "urn:li:corpuser:manager";
export const NOBODY = "urn:li:corpuser:nobody";
export const EVALUATE = "/gms/test?action=evaluate";
export const BATCH = "/gms/test?action=batchEvaluate";

export const HAS_DESCRIPTION = `
on:
  types: [dataset]
rules:
  - property: datasetProperties.description
    operator: exists
`;
export const HAS_OWNER = JSON.stringify({
  on: { types: ["DATASET"] },
  rules: [
    { query: "ownership.owners.owner", operation: "exists" },
    { property: "ownership.owners.type", operator: "equals", value: "TECHNICAL_OWNER" },
  ],
});
export const HIVE_TAGGED = JSON.stringify({
  on: {
    types: ["dataset"],
    conditions: { property: "platform", operator: "equals", value: "urn:li:dataPlatform:hive" },
  },
  rules: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii"] },
});
export const CHART_TITLED = JSON.stringify({
  on: { types: ["chart"] },
  rules: { property: "chartInfo.title", operator: "exists" },
});
export const DESCRIBED_AS_ORDERS = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
});

export const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
export const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
export const DELETE = `mutation($urn: String!) { deleteTest(urn: $urn) }`;
export const RUN = `mutation($urn: String!, $push: Boolean, $batchSize: Int) { runTest(urn: $urn, push: $push, batchSize: $batchSize) }`;
export const RESULTS = `query($urn: String!) {
  testResults(urn: $urn) { passing { type test { urn name } } failing { type test { urn } failedRules { path property actual message } } }
}`;

export interface Evaluation {
  urn: string;
  passing: Array<{ test: string; type: string }>;
  failing: Array<{ test: string; type: string; failedRules: Array<Record<string, unknown>> }>;
  notApplicable: string[];
  evaluatedAt: number;
}

/** What the tests read of an evaluate job's payload. */
export type EvaluatePayload = { items: Array<{ urns: string[]; actorUrn: string }> };

export const aspect = (entityUrn: string, aspectName: string, value: unknown) => ({
  entityType: entityUrn.split(":")[2],
  entityUrn,
  aspectName,
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
});

/** The gateway and worker of a file, set before its first test (by the setup's beforeAll). */
export interface MetadataTestsContext {
  h: Harness;
  worker: RunningWorker;
}

/**
 * Registers the file's beforeAll/afterAll: a gateway and an evaluation worker; VIEWER with VIEW_TESTS and MANAGER
 * with MANAGE_TESTS; HIVE, KAFKA, CHART and USER ingested; then `tests` created as the root user ([id, definition,
 * more input]), in order.
 */
export function metadataTestsSetup(tests: Array<[id: string, json: string, more?: Record<string, unknown>]> = []) {
  const ctx = {} as MetadataTestsContext;
  const asRoot = systemClientHeaders(ROOT);
  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) =>
    (await ctx.h.graphql(query, variables, systemClientHeaders(actor))).body;
  const createTest = async (id: string, json: string, extra: Record<string, unknown> = {}) => {
    const body = await gql(CREATE, {
      input: { id, name: `test ${id}`, category: "Quality", definition: { json }, ...extra },
    });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data?.createTest as string;
  };
  const ingest = async (proposals: unknown[]) => {
    const res = await ctx.h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, asRoot);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const evaluate = async (body: unknown, actor = ROOT) => ctx.h.post(EVALUATE, body, systemClientHeaders(actor));
  const evaluation = async (body: unknown) => {
    const res = await evaluate(body);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    return res.body.value as Evaluation;
  };
  const storedResults = async (urn: string) => {
    const res = await fetch(`${ctx.h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, { headers: asRoot });
    return ((await res.json()) as { value: { aspects: Record<string, unknown> } }).value.aspects.testResults;
  };
  /** The latest testResults version as stored, before any read path hides the entries of deleted or retyped tests. */
  const rawTestResults = async (urn: string) =>
    (
      await ctx.h.database.pool.query<{ value: unknown }>(
        "SELECT value FROM aspect WHERE urn = $1 AND aspect_name = 'testResults' ORDER BY version DESC LIMIT 1",
        [urn],
      )
    ).rows[0]?.value;
  const taskStatus = async (taskId: string) =>
    (await ctx.h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown> & {
      state: string;
    };
  const waitForTask = (taskId: string, states: readonly string[]) => waitForState(taskStatus, taskId, states);

  beforeAll(async () => {
    ctx.h = await startGateway();
    ctx.worker = await startEvaluationWorker(ctx.h);
    await grant(ctx.h, VIEWER, ["VIEW_TESTS"]);
    await grant(ctx.h, MANAGER, ["MANAGE_TESTS"]);
    await ingest([
      aspect(HIVE, "datasetProperties", { description: "All orders" }),
      aspect(HIVE, "globalTags", { tags: [{ tag: "urn:li:tag:finance" }] }),
      aspect(KAFKA, "datasetProperties", { description: "Order events" }),
      aspect(KAFKA, "ownership", { owners: [{ owner: USER, type: "TECHNICAL_OWNER" }] }),
      aspect(CHART, "chartInfo", { title: "Orders" }),
      aspect(USER, "corpUserInfo", { active: true }),
    ]);
    for (const [id, json, more] of tests) await createTest(id, json, more);
  });
  afterAll(async () => {
    await ctx.worker?.close();
    await ctx.h?.close();
  });

  return {
    ctx,
    asRoot,
    gql,
    createTest,
    ingest,
    evaluate,
    evaluation,
    storedResults,
    rawTestResults,
    taskStatus,
    waitForTask,
  };
}
