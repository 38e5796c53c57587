/**
 * The gateway and evaluation worker the evaluation results tests run against (evaluation-result-bounds and
 * evaluation-reply-connections .int.spec.ts), with their users' grants, the large entities and the tests that fail
 * them, set up in beforeAll and closed in afterAll, and the helpers those tests call. Call it once inside a describe.
 */
import { startEvaluationWorker, type RunningWorker } from "./evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./gateway-harness";
import {
  VIEWER,
  READER,
  TASKS,
  MANAGER,
  LONG,
  TAGGED,
  taggedNumber,
  DESCRIPTION,
  TAGS,
  failingRules,
} from "./evaluation-results";

export function startEvaluationResultsHarness() {
  const asRoot = systemClientHeaders(ROOT);
  const insert = async (urn: string, aspectName: string, value: unknown) => {
    // Straight to the table: faster than ingestion for values this size, and the same rows.
    await ev.gateway.database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, $2, 0, 'dataset', $3::jsonb, $4)`,
      [urn, aspectName, JSON.stringify(value), ROOT],
    );
  };
  const createTest = async (id: string, json: string) => {
    const res = await ev.gateway.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      { input: { id, name: id, category: "x", definition: { json } } },
      asRoot,
    );
    expect(res.body).toEqual({ data: { createTest: `urn:li:test:${id}` } });
  };
  const ev = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    worker: undefined as unknown as RunningWorker,
    asRoot,
    insert,
    createTest,
    /** The answer as text: its size is what the byte bounds bound. */
    post: async (path: string, body: unknown, actor = ROOT) => {
      const res = await fetch(`${ev.gateway.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...systemClientHeaders(actor) },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Record<string, unknown> };
    },
    rawTestResults: async (urn: string) =>
      (
        await ev.gateway.database.pool.query<{ value: unknown; bytes: number }>(
          `SELECT value, octet_length(value::text) AS bytes FROM aspect
          WHERE urn = $1 AND aspect_name = 'testResults' ORDER BY version DESC LIMIT 1`,
          [urn],
        )
      ).rows[0],
  };

  beforeAll(async () => {
    const h = (ev.gateway = await startGateway());
    ev.worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, READER, ["VIEW_TESTS", "GET_ENTITY"]);
    await grant(h, TASKS, ["GET_TASK_STATUS"]);
    await grant(h, MANAGER, ["MANAGE_TESTS"]);
    await insert(LONG, "datasetProperties", { description: DESCRIPTION });
    await insert(TAGGED, "globalTags", { tags: TAGS });
    for (let i = 0; i < 10; i++) await insert(taggedNumber(i), "globalTags", { tags: TAGS });
    await createTest("long", failingRules(50, "datasetProperties.description"));
    // 199 rules, each finding 20 values of 300+ characters: about 2 MB of failed rules even with every value cut.
    await createTest("wide", failingRules(199, "globalTags.tags.tag"));
    // About 460 KB per entity (9 KB a rule): under the entity limit, 10 entities of it over the answer limit.
    await createTest("medium", failingRules(52, "globalTags.tags.tag"));
  });
  afterAll(async () => {
    await ev.worker?.close();
    await ev.gateway?.close();
  });
  return ev;
}
