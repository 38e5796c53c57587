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
import { ROOT, systemClientHeaders } from "./support/gateway-harness";
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
  FailedRule,
  Evaluation,
  escape,
} from "./support/evaluation-results";
import { startEvaluationResultsHarness } from "./support/evaluation-results-harness";

describe("evaluation results: bounded, and values only for GET_ENTITY", () => {
  const ev = startEvaluationResultsHarness();
  const { asRoot, post, rawTestResults } = ev;

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
    const run = await ev.gateway.graphql(
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
    await ev.gateway.database.pool.query("DELETE FROM aspect WHERE urn = $1 AND aspect_name = 'testResults'", [LONG]);
    const res = await post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"], push: true }, MANAGER);
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain("secret-owner-text");
    const stored = (await rawTestResults(LONG))!.value as Evaluation;
    expect(stored.failing[0]!.failedRules[0]!.actual).toHaveLength(1);
  });

  it("shows stored testResults (GraphQL) without values to a caller without GET_ENTITY", async () => {
    const query = `query($urn: String!) { testResults(urn: $urn) { failing { failedRules { actual actualCount message } } } }`;
    const rulesFor = async (actor: string) => {
      const res = await ev.gateway.graphql(query, { urn: LONG }, systemClientHeaders(actor));
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
    const redis = createRedis(ev.gateway.config.REDIS_URL, "producer");
    await whenReady(redis);
    const producer = new Producer("evaluate", redis, ev.gateway.config.QUEUE_PREFIX);
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
      await ev.gateway.database.pool.query(
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
