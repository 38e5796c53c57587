/**
 * What an evaluation answers and stores is bounded in bytes, and shows the values it found only to a caller who may
 * read the entity (docs/limits.md "Evaluation results"), with a real gateway, a real evaluation worker, PostgreSQL and
 * Redis: values cut to 200 characters in answers and in stored testResults, one entity's result and one answer capped
 * (a 400 naming the limit), failed rules without values for a caller without GET_ENTITY (evaluate, testResults, task
 * status). Evaluation replies on a subscriber connection of their own: evaluation-reply-connections.int.spec.ts.
 */
import { randomUUID } from "node:crypto";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer, whenReady } from "@mdp/queues";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import {
  EVALUATE,
  BATCH,
  VIEWER,
  READER,
  TASKS,
  MANAGER,
  LONG,
  TAGGED,
  taggedNumber,
  DESCRIPTION,
  TAGS,
  FailedRule,
  Evaluation,
  failingRules,
  escape,
} from "./support/evaluation-results";

describe("evaluation results: bounded, and values only for GET_ENTITY", () => {
  let h: Harness;
  let worker: RunningWorker;
  const asRoot = systemClientHeaders(ROOT);

  const insert = async (urn: string, aspectName: string, value: unknown) => {
    // Straight to the table: faster than ingestion for values this size, and the same rows.
    await h.database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, $2, 0, 'dataset', $3::jsonb, $4)`,
      [urn, aspectName, JSON.stringify(value), ROOT],
    );
  };
  const createTest = async (id: string, json: string) => {
    const res = await h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      { input: { id, name: id, category: "x", definition: { json } } },
      asRoot,
    );
    expect(res.body).toEqual({ data: { createTest: `urn:li:test:${id}` } });
  };
  /** The answer as text: its size is what the byte bounds bound. */
  const post = async (path: string, body: unknown, actor = ROOT) => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(actor) },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Record<string, unknown> };
  };
  const rawTestResults = async (urn: string) =>
    (
      await h.database.pool.query<{ value: unknown; bytes: number }>(
        `SELECT value, octet_length(value::text) AS bytes FROM aspect
          WHERE urn = $1 AND aspect_name = 'testResults' ORDER BY version DESC LIMIT 1`,
        [urn],
      )
    ).rows[0];

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
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
    await worker?.close();
    await h?.close();
  });

  it("cuts each value a failed rule shows: 50 rules on a 200 KB description answer a few KB per rule", async () => {
    const res = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"] });
    expect(res.status).toBe(200);
    expect(res.bytes).toBeLessThan(50 * 2048); // was 10.3 MB
    const rules = (res.body.value as Evaluation).failing[0]!.failedRules;
    expect(rules).toHaveLength(50);
    for (const rule of rules) {
      expect(rule.actualCount).toBe(1);
      expect(rule.actual).toEqual([`${DESCRIPTION.slice(0, 200)}… (cut from ${DESCRIPTION.length} characters)`]);
      expect(rule.message.length).toBeLessThan(1024);
    }
  });

  it("stores cut values with push: true, and the stored testResults stay small", async () => {
    const res = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"], push: true });
    expect(res.status).toBe(200);
    const stored = await rawTestResults(LONG);
    expect(stored!.bytes).toBeLessThan(50 * 2048); // was 20 MB for a 400 KB description
    const rule = (stored!.value as Evaluation).failing[0]!.failedRules[0]!;
    expect(rule.actual).toEqual([`${DESCRIPTION.slice(0, 200)}… (cut from ${DESCRIPTION.length} characters)`]);
  });

  it("refuses, with a 400 naming the limit and the test, a result past the per-entity limit even with values cut; nothing is pushed", async () => {
    const before = await rawTestResults(TAGGED);
    const res = await post(EVALUATE, { urn: TAGGED, testUrns: ["urn:li:test:wide"], push: true });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.message).toMatch(
      new RegExp(`^The result for ${escape(TAGGED)} is \\d+ bytes, more than the limit of 524288 bytes per entity`),
    );
    expect(res.body.message).toContain("test urn:li:test:wide alone is");
    expect(res.bytes).toBeLessThan(4096);
    expect(await rawTestResults(TAGGED)).toEqual(before);
  });

  it("refuses a batchEvaluate whose results together pass the answer limit, naming it", async () => {
    const one = await post(EVALUATE, { urn: taggedNumber(0), testUrns: ["urn:li:test:medium"] });
    expect(one.status).toBe(200);
    expect(one.bytes).toBeGreaterThan(400 * 1024);
    const urns = Array.from({ length: 10 }, (_, i) => taggedNumber(i));
    const res = await post(BATCH, { urns, testUrns: ["urn:li:test:medium"] });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(
      /^The results for the 10 entities of this request are \d+ bytes, more than the limit of 4194304 bytes per answer/,
    );
  });

  it("stores a runTest's results within the per-entity limit: the heaviest rules lose their values, counts stay", async () => {
    const run = await h.graphql(
      `mutation { runTest(urn: "urn:li:test:wide", push: true, batchSize: 100) }`,
      {},
      asRoot,
    );
    const taskId = run.body.data?.runTest as string;
    const ended = await eventually(
      "runTest's task ended",
      async () => (await post("/gms/operations?action=getTaskStatus", { taskId })).body.value as { state: string },
      { timeoutMs: 30_000, until: (status) => status.state === "completed" || status.state === "failed" },
    );
    expect(ended).toMatchObject({ state: "completed" });
    const stored = await rawTestResults(TAGGED);
    expect(stored!.bytes).toBeLessThanOrEqual(512 * 1024);
    const wide = (stored!.value as Evaluation).failing.find((r) => r.test === "urn:li:test:wide")!;
    expect(wide.failedRules).toHaveLength(199);
    expect(wide.failedRules.every((r) => r.actualCount === 20)).toBe(true);
  });

  it("shows a caller without GET_ENTITY what failed and how many values were found, never the values", async () => {
    const viewer = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"] }, VIEWER);
    expect(viewer.status).toBe(200);
    const rule = (viewer.body.value as Evaluation).failing[0]!.failedRules[0]!;
    expect(rule).toEqual(
      expect.objectContaining({ property: "datasetProperties.description", actual: [], actualCount: 1 }),
    );
    expect(rule.message).toBe(
      'Expected datasetProperties.description to contain "absent-0", and it has 1 value (not shown: reading them needs GET_ENTITY)',
    );
    expect(JSON.stringify(viewer.body)).not.toContain("secret-owner-text");

    const reader = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"] }, READER);
    const shown = (reader.body.value as Evaluation).failing[0]!.failedRules[0]!;
    expect(shown.actual).toEqual([`${DESCRIPTION.slice(0, 200)}… (cut from ${DESCRIPTION.length} characters)`]);
  });

  it("stores the values of a push by a caller without GET_ENTITY, and answers it without them", async () => {
    await h.database.pool.query("DELETE FROM aspect WHERE urn = $1 AND aspect_name = 'testResults'", [LONG]);
    const res = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"], push: true }, MANAGER);
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain("secret-owner-text");
    const stored = (await rawTestResults(LONG))!.value as Evaluation;
    expect(stored.failing[0]!.failedRules[0]!.actual).toHaveLength(1);
  });

  it("shows stored testResults (GraphQL) without values to a caller without GET_ENTITY", async () => {
    const query = `query($urn: String!) { testResults(urn: $urn) { failing { failedRules { actual actualCount message } } } }`;
    const rulesFor = async (actor: string) => {
      const res = await h.graphql(query, { urn: LONG }, systemClientHeaders(actor));
      const data = res.body.data as { testResults: { failing: Array<{ failedRules: FailedRule[] }> } };
      return data.testResults.failing[0]!.failedRules;
    };
    const viewer = await rulesFor(VIEWER);
    expect(viewer[0]).toEqual(expect.objectContaining({ actual: [], actualCount: 1 }));
    expect(JSON.stringify(viewer)).not.toContain("secret-owner-text");
    expect((await rulesFor(READER))[0]!.actual[0]).toMatch(/^secret-owner-text d+… \(cut from \d+ characters\)$/);
  });

  it("shows an evaluation task's result without values to a GET_TASK_STATUS holder without GET_ENTITY", async () => {
    // An evaluate job nobody waits for records its task row (as a 504'd one does).
    const redis = createRedis(h.config.REDIS_URL, "producer");
    await whenReady(redis);
    const producer = new Producer("evaluate", redis, h.config.QUEUE_PREFIX);
    const taskId = randomUUID();
    try {
      await producer.enqueue(randomUUID(), {
        kind: "evaluate",
        items: [
          { taskId, urns: [LONG], push: false, testUrns: ["urn:li:test:long"], actorUrn: ROOT, showValues: true },
        ],
      });
    } finally {
      await producer.close();
      await closeRedis(redis);
    }
    const statusAs = async (actor: string) =>
      (await post("/gms/operations?action=getTaskStatus", { taskId }, actor)).body.value as
        | undefined
        | {
            state: string;
            result: { results: Record<string, Evaluation> };
          };
    // The row is written when the job ends (404 until then).
    await eventually("the evaluation task completed", () => statusAs(ROOT), {
      timeoutMs: 20_000,
      until: (status) => status?.state === "completed",
    });
    const rootRule = (await statusAs(ROOT))!.result.results[LONG]!.failing[0]!.failedRules[0]!;
    expect(rootRule.actual).toHaveLength(1);
    const tasksView = (await statusAs(TASKS))!;
    expect(tasksView.result.results[LONG]!.failing[0]!.failedRules[0]).toEqual(
      expect.objectContaining({ actual: [], actualCount: 1 }),
    );
    expect(JSON.stringify(tasksView)).not.toContain("secret-owner-text");
    const listed = await post("/gms/operations?action=listTasks", { type: "EVALUATE_TESTS" }, TASKS);
    expect(JSON.stringify(listed.body)).not.toContain("secret-owner-text");
  });

  it("carries at most 4 MiB of results in one listTasks page, naming where to read the rest", async () => {
    // Evaluation rows of 1.5 MB results each (each within one answer's limit), written as the worker would.
    const creator = "urn:li:corpuser:big-results";
    const ids = Array.from({ length: 4 }, () => randomUUID());
    for (const [i, id] of ids.entries()) {
      const result = { results: { [LONG]: { urn: LONG, padding: "p".repeat(1_500_000) } } };
      await h.database.pool.query(
        `INSERT INTO task (id, type, state, request, progress, result, created_by, created_at, finished_at)
         VALUES ($1, 'EVALUATE_TESTS', 'completed', '{}', '{}', $2::jsonb, $3, now() - ($4 || ' ms')::interval, now())`,
        [id, JSON.stringify(result), creator, String(i)],
      );
    }
    const page = await post("/gms/operations?action=listTasks", { createdBy: creator });
    expect(page.status).toBe(200);
    expect(page.bytes).toBeLessThan(4 * 1024 * 1024 + 64 * 1024);
    const tasks = (page.body.value as { tasks: Array<{ taskId: string; result: Record<string, unknown> }> }).tasks;
    expect(tasks).toHaveLength(4);
    expect(tasks.filter((t) => "results" in t.result)).toHaveLength(2);
    for (const task of tasks.filter((t) => !("results" in t.result))) {
      expect(task.result.omitted).toBe(
        `This page's results passed the limit of 4194304 bytes per answer; getTaskStatus ${task.taskId} shows this one.`,
      );
    }
  });
});
