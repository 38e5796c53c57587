/**
 * Metadata tests end to end in one process: the gateway over real HTTP and GraphQL, a real BullMQ evaluation worker,
 * real PostgreSQL. Definitions and their validation, evaluate and batchEvaluate (selection, failedRules, refusals,
 * privileges), pushed results merged atomically under concurrent pushes, edits honoured by the next evaluation, the
 * 504 with a task id that getTaskStatus follows, and runTest over every selected entity in batches.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { AspectRepository, inTransaction } from "@mdp/db";
import { closeRedis, createRedis, QUEUE_NAMES, subscribeToReplies, whenReady } from "@mdp/queues";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const HIVE = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
const KAFKA = "urn:li:dataset:(urn:li:dataPlatform:kafka,orders,PROD)";
const CHART = "urn:li:chart:(looker,orders)";
const USER = "urn:li:corpuser:ann";
const VIEWER = "urn:li:corpuser:viewer";
const MANAGER = "urn:li:corpuser:manager";
const NOBODY = "urn:li:corpuser:nobody";
const EVALUATE = "/gms/test?action=evaluate";
const BATCH = "/gms/test?action=batchEvaluate";

const HAS_DESCRIPTION = `
on:
  types: [dataset]
rules:
  - property: datasetProperties.description
    operator: exists
`;
const HAS_OWNER = JSON.stringify({
  on: { types: ["DATASET"] },
  rules: [
    { query: "ownership.owners.owner", operation: "exists" },
    { property: "ownership.owners.type", operator: "equals", value: "TECHNICAL_OWNER" },
  ],
});
const HIVE_TAGGED = JSON.stringify({
  on: {
    types: ["dataset"],
    conditions: { property: "platform", operator: "equals", value: "urn:li:dataPlatform:hive" },
  },
  rules: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii"] },
});
const CHART_TITLED = JSON.stringify({
  on: { types: ["chart"] },
  rules: { property: "chartInfo.title", operator: "exists" },
});
const DESCRIBED_AS_ORDERS = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
});

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
const DELETE = `mutation($urn: String!) { deleteTest(urn: $urn) }`;
const RUN = `mutation($urn: String!, $push: Boolean, $batchSize: Int) { runTest(urn: $urn, push: $push, batchSize: $batchSize) }`;
const RESULTS = `query($urn: String!) {
  testResults(urn: $urn) { passing { type test { urn name } } failing { type test { urn } failedRules { path property actual message } } }
}`;

interface Evaluation {
  urn: string;
  passing: Array<{ test: string; type: string }>;
  failing: Array<{ test: string; type: string; failedRules: Array<Record<string, unknown>> }>;
  notApplicable: string[];
  evaluatedAt: number;
}

/** What the tests read of an evaluate job's payload. */
type EvaluatePayload = { items: Array<{ urns: string[]; actorUrn: string }> };

const aspect = (entityUrn: string, aspectName: string, value: unknown) => ({
  entityType: entityUrn.split(":")[2],
  entityUrn,
  aspectName,
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
});

describe("metadata tests", () => {
  let h: Harness;
  let worker: RunningWorker;
  const asRoot = systemClientHeaders(ROOT);

  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) =>
    (await h.graphql(query, variables, systemClientHeaders(actor))).body;
  const createTest = async (id: string, json: string, extra: Record<string, unknown> = {}) => {
    const body = await gql(CREATE, {
      input: { id, name: `test ${id}`, category: "Quality", definition: { json }, ...extra },
    });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data?.createTest as string;
  };
  const ingest = async (proposals: unknown[]) => {
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, asRoot);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const evaluate = async (body: unknown, actor = ROOT) => h.post(EVALUATE, body, systemClientHeaders(actor));
  const evaluation = async (body: unknown) => {
    const res = await evaluate(body);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    return res.body.value as Evaluation;
  };
  const storedResults = async (urn: string) => {
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, { headers: asRoot });
    return ((await res.json()) as { value: { aspects: Record<string, unknown> } }).value.aspects.testResults;
  };
  /** The latest testResults version as stored, before any read path hides the entries of deleted or retyped tests. */
  const rawTestResults = async (urn: string) =>
    (
      await h.database.pool.query<{ value: unknown }>(
        "SELECT value FROM aspect WHERE urn = $1 AND aspect_name = 'testResults' ORDER BY version DESC LIMIT 1",
        [urn],
      )
    ).rows[0]?.value;
  const taskStatus = async (taskId: string) =>
    (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
  const waitForState = (taskId: string, states: string[], timeoutMs = 20_000) =>
    eventually(`task ${taskId} ${states.join(" or ")}`, () => taskStatus(taskId), {
      timeoutMs,
      until: (status) => states.includes(status.state as string),
    });

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, MANAGER, ["MANAGE_TESTS"]);
    await ingest([
      aspect(HIVE, "datasetProperties", { description: "All orders" }),
      aspect(HIVE, "globalTags", { tags: [{ tag: "urn:li:tag:finance" }] }),
      aspect(KAFKA, "datasetProperties", { description: "Order events" }),
      aspect(KAFKA, "ownership", { owners: [{ owner: USER, type: "TECHNICAL_OWNER" }] }),
      aspect(CHART, "chartInfo", { title: "Orders" }),
      aspect(USER, "corpUserInfo", { active: true }),
    ]);
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  describe("definitions over GraphQL", () => {
    it("creates a test from YAML, keeping the text as written, the normalized form and the registry's type names", async () => {
      expect(await createTest("described", HAS_DESCRIPTION)).toBe("urn:li:test:described");
      expect(await createTest("owned", HAS_OWNER)).toBe("urn:li:test:owned");
      const body = await gql(
        `query($urn: String!) { test(urn: $urn) { urn name category state onTypes definition { json normalized } createdBy } }`,
        { urn: "urn:li:test:owned" },
      );
      expect(body.data?.test).toEqual({
        urn: "urn:li:test:owned",
        name: "test owned",
        category: "Quality",
        state: "ACTIVE",
        onTypes: ["dataset"],
        definition: {
          json: HAS_OWNER,
          normalized: JSON.stringify({
            on: { types: ["DATASET"] },
            rules: {
              and: [
                { property: "ownership.owners.owner", operator: "exists" },
                { property: "ownership.owners.type", operator: "equals", values: ["TECHNICAL_OWNER"] },
              ],
            },
          }),
        },
        createdBy: ROOT,
      });
      const audit = await h.prisma.auditEvent.findFirst({
        where: { action: "test.create", targetUrn: "urn:li:test:owned" },
      });
      expect(audit).toMatchObject({ actorUrn: ROOT, details: { name: "test owned", onTypes: ["dataset"] } });
    });

    it("answers NOT_FOUND, not an internal error, to the second of two concurrent deletes of a test", async () => {
      const urn = await createTest("raced", CHART_TITLED);
      const answers = await Promise.all([gql(DELETE, { urn }), gql(DELETE, { urn })]);
      expect(answers.map((a) => a.errors?.[0]?.extensions?.code ?? "ok").sort()).toEqual(["NOT_FOUND", "ok"]);
    });

    it("generates an id when none is given", async () => {
      const urn = await createTest("", CHART_TITLED);
      expect(urn).toMatch(/^urn:li:test:[0-9a-f-]{36}$/);
      expect(await gql(DELETE, { urn })).toEqual({ data: { deleteTest: true } });
    });

    it.each([
      [
        '{"on": {"types": ["dataset"]}, "rules": [{"property": "a", "operator": "exists"}, {"property": "b", "operator": "bigger"}]}',
        "Failed to validate test definition: rules[1].operator: unknown operator 'bigger'",
      ],
      [
        '{"on": {"types": ["datset"]}, "rules": {"property": "a", "operator": "exists"}}',
        "Failed to validate test definition: on.types[0]: unknown entity type 'datset' (known: dataset, chart",
      ],
      [
        '{"on": {"types": ["dataset"]}, "rules": {"property": "a", "operator": "regex_match", "value": "("}}',
        "Failed to validate test definition: rules.value",
      ],
      ["on: [", "Failed to validate test definition: not valid YAML"],
    ])("refuses an invalid definition %#, saying what and where, and stores nothing", async (json, message) => {
      const before = await h.prisma.metadataTest.count();
      const body = await gql(CREATE, { input: { id: "bad", name: "bad", category: "x", definition: { json } } });
      expect(body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
      expect(body.errors?.[0]?.message).toContain(message);
      expect(await h.prisma.metadataTest.count()).toBe(before);
    });

    it("refuses a duplicate id, a bad name and a bad id with the right codes", async () => {
      const dup = await gql(CREATE, {
        input: { id: "owned", name: "again", category: "x", definition: { json: HAS_OWNER } },
      });
      expect(dup.errors?.[0]).toMatchObject({
        message: "Test urn:li:test:owned already exists",
        extensions: { code: "CONFLICT" },
      });
      const noName = await gql(CREATE, { input: { name: " ", category: "x", definition: { json: HAS_OWNER } } });
      expect(noName.errors?.[0]?.message).toBe("input.name must be 1 to 256 characters long");
      const badId = await gql(CREATE, {
        input: { id: "a(b", name: "n", category: "x", definition: { json: HAS_OWNER } },
      });
      expect(badId.errors?.[0]).toMatchObject({ extensions: { code: "BAD_USER_INPUT" } });
      expect(badId.errors?.[0]?.message).toContain("input.id");
    });

    it("updates and deletes with NOT_FOUND for unknown tests, auditing each change", async () => {
      const urn = await createTest("temp", HAS_DESCRIPTION);
      const input = { name: "renamed", category: "Docs", definition: { json: DESCRIBED_AS_ORDERS }, state: "INACTIVE" };
      expect(await gql(UPDATE, { urn, input })).toEqual({ data: { updateTest: urn } });
      expect(await h.prisma.metadataTest.findUnique({ where: { urn } })).toMatchObject({
        name: "renamed",
        state: "INACTIVE",
        definitionText: DESCRIBED_AS_ORDERS,
      });
      const missing = await gql(UPDATE, { urn: "urn:li:test:none", input });
      expect(missing.errors?.[0]).toMatchObject({
        message: "Test urn:li:test:none does not exist",
        extensions: { code: "NOT_FOUND" },
      });
      expect(await gql(DELETE, { urn })).toEqual({ data: { deleteTest: true } });
      expect((await gql(DELETE, { urn })).errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
      const actions = await h.prisma.auditEvent.findMany({ where: { targetUrn: urn }, orderBy: { id: "asc" } });
      expect(actions.map((a) => a.action)).toEqual(["test.create", "test.update", "test.delete"]);
    });

    it("lists tests oldest first with paging and a query", async () => {
      const all = await gql(`{ listTests(input: {start: 0, count: 1}) { start count total tests { urn } } }`, {});
      expect(all.data?.listTests).toEqual({ start: 0, count: 1, total: 2, tests: [{ urn: "urn:li:test:described" }] });
      const found = await gql(`{ listTests(input: {query: "OWNED"}) { total tests { urn } } }`, {});
      expect(found.data?.listTests).toEqual({ total: 1, tests: [{ urn: "urn:li:test:owned" }] });
    });

    it("needs VIEW_TESTS to read and MANAGE_TESTS to change", async () => {
      const denied = await gql(`{ listTests(input: {}) { total } }`, {}, NOBODY);
      expect(denied.errors?.[0]).toMatchObject({
        message: `${NOBODY} is unauthorized to list metadata tests.`,
        extensions: { code: "FORBIDDEN" },
      });
      expect((await gql(`{ listTests(input: {}) { total } }`, {}, VIEWER)).data?.listTests).toEqual({ total: 2 });
      const create = { input: { id: "v", name: "v", category: "x", definition: { json: HAS_DESCRIPTION } } };
      expect((await gql(CREATE, create, VIEWER)).errors?.[0]?.message).toBe(
        `${VIEWER} is unauthorized to create metadata tests.`,
      );
      expect((await gql(DELETE, { urn: "urn:li:test:owned" }, VIEWER)).errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
      // MANAGE_TESTS implies VIEW_TESTS
      expect((await gql(`{ test(urn: "urn:li:test:owned") { urn } }`, {}, MANAGER)).data?.test).toEqual({
        urn: "urn:li:test:owned",
      });
    });
  });

  describe("evaluate", () => {
    beforeAll(async () => {
      await createTest("hive-tagged", HIVE_TAGGED);
      await createTest("chart-titled", CHART_TITLED);
      await createTest("inactive", DESCRIBED_AS_ORDERS, { state: "INACTIVE" });
    });

    it("leaves the queue dashboard a summary of each evaluation, not its results again", async () => {
      const value = await evaluation({ urn: HIVE });
      const redis = createRedis(h.config.REDIS_URL, "worker");
      const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
      const [job] = await queue.getCompleted(0, 0); // the latest
      await queue.close();
      await closeRedis(redis);
      const summary = { urns: 1, passing: value.passing.length, failing: value.failing.length, notApplicable: 0 };
      expect(Object.values((job?.returnvalue as { tasks: object }).tasks)).toEqual([summary]);
      expect(JSON.stringify(job?.returnvalue)).not.toContain("failedRules");
    });

    it("runs every ACTIVE test whose on clause selects the entity, saying which rules failed", async () => {
      const before = Date.now();
      const value = await evaluation({ urn: HIVE });
      expect(value).toEqual({
        urn: HIVE,
        passing: [{ test: "urn:li:test:described", type: "SUCCESS" }],
        failing: [
          {
            test: "urn:li:test:hive-tagged",
            type: "FAILURE",
            failedRules: [
              expect.objectContaining({
                path: "rules",
                property: "globalTags.tags.tag",
                operator: "contains_any",
                expected: ["urn:li:tag:pii"],
                actual: ["urn:li:tag:finance"],
              }),
            ],
          },
          {
            test: "urn:li:test:owned",
            type: "FAILURE",
            failedRules: [
              expect.objectContaining({ path: "rules.and[0]", property: "ownership.owners.owner", actual: [] }),
              expect.objectContaining({ path: "rules.and[1]", property: "ownership.owners.type" }),
            ],
          },
        ],
        notApplicable: [],
        evaluatedAt: expect.any(Number),
      });
      expect(value.evaluatedAt).toBeGreaterThanOrEqual(before);
      // Kafka: the hive-only test's conditions do not hold, so it neither passes nor fails.
      expect(await evaluation({ urn: KAFKA })).toMatchObject({
        passing: [
          { test: "urn:li:test:described", type: "SUCCESS" },
          { test: "urn:li:test:owned", type: "SUCCESS" },
        ],
        failing: [],
        notApplicable: ["urn:li:test:hive-tagged"],
      });
      expect(await evaluation({ urn: CHART })).toMatchObject({
        passing: [{ test: "urn:li:test:chart-titled", type: "SUCCESS" }],
        failing: [],
        notApplicable: [],
      });
      expect(await evaluation({ urn: USER })).toMatchObject({ passing: [], failing: [], notApplicable: [] });
    });

    it("runs only the named tests (testUrns, or its alias tests), INACTIVE ones included", async () => {
      expect(
        await evaluation({ urn: HIVE, testUrns: ["urn:li:test:inactive", "urn:li:test:chart-titled"] }),
      ).toMatchObject({
        passing: [{ test: "urn:li:test:inactive" }],
        failing: [],
        notApplicable: ["urn:li:test:chart-titled"],
      });
      expect(await evaluation({ urn: KAFKA, tests: ["urn:li:test:owned"] })).toMatchObject({
        passing: [{ test: "urn:li:test:owned" }],
        failing: [],
      });
    });

    describe("task rows: written only where a caller can have been given the task id (a 504)", () => {
      let redis: ReturnType<typeof createRedis>;
      let subscriber: ReturnType<typeof createRedis>;
      let queue: Queue;
      const listening = `${Date.now()}:listening`;
      const replies: string[] = [];
      beforeAll(async () => {
        redis = createRedis(h.config.REDIS_URL, "producer");
        subscriber = createRedis(h.config.REDIS_URL, "subscriber");
        // a producer's connection queues no command while a cluster connects: the queue's first one waits for it
        await Promise.all([whenReady(redis), whenReady(subscriber)]);
        await subscribeToReplies(subscriber, listening, (message) => replies.push(message));
        queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
      });
      afterAll(async () => {
        await queue.close();
        await closeRedis(subscriber);
        await closeRedis(redis);
      });

      /** Queues an evaluate job as a gateway does (waiting 30 s), waits for it to end, and returns its task's row. */
      const evaluateJob = async (options: { replyTo: string; urn?: string; queuedMsAgo?: number }) => {
        const taskId = randomUUID();
        const item = { taskId, urns: [options.urn ?? HIVE], push: false, actorUrn: ROOT };
        const job = await queue.add(
          "evaluate",
          { kind: "evaluate", items: [item], replyTo: options.replyTo, waitMs: 30_000 },
          { jobId: randomUUID(), timestamp: Date.now() - (options.queuedMsAgo ?? 0) },
        );
        await eventually("the evaluate job completed", () => job.getState(), {
          until: (state) => state === "completed",
        });
        return h.prisma.task.findUnique({ where: { id: taskId } });
      };

      it("answered in time: the reply reached its gateway, and no row is written", async () => {
        const before = replies.length;
        expect(await evaluateJob({ replyTo: listening })).toBeNull();
        expect(replies.length).toBe(before + 1);
      });

      it("a reply that reached no gateway: its caller will get a 504, so the row is completed", async () => {
        expect(await evaluateJob({ replyTo: `${listening}:gone` })).toMatchObject({
          type: "EVALUATE_TESTS",
          state: "completed",
          request: { kind: "evaluate", urns: [HIVE], push: false },
          progress: { evaluated: 1, total: 1, percent: 100 },
          result: { results: { [HIVE]: { urn: HIVE } } },
          attemptsMade: 1,
        });
      });

      it("a job that ran as long as its gateway waits: the row is completed, the reply delivered or not", async () => {
        expect(await evaluateJob({ replyTo: listening, queuedMsAgo: 30_000 })).toMatchObject({ state: "completed" });
      });

      it("a row that cannot be written does not turn the answer already sent into a failure", async () => {
        // Every write of an evaluation's row fails while this trigger exists.
        await h.database.pool.query(`
          CREATE FUNCTION refuse_evaluation_rows() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'task rows refused by the test'; END $$;
          CREATE TRIGGER refuse_evaluation_rows BEFORE INSERT OR UPDATE ON task
            FOR EACH ROW WHEN (NEW.type = 'EVALUATE_TESTS') EXECUTE FUNCTION refuse_evaluation_rows()`);
        const before = replies.length;
        try {
          const taskId = randomUUID();
          const job = await queue.add(
            "evaluate",
            {
              kind: "evaluate",
              items: [{ taskId, urns: [HIVE], push: false, actorUrn: ROOT }],
              replyTo: listening,
              waitMs: 30_000,
            },
            { jobId: randomUUID(), timestamp: Date.now() - 30_000, attempts: 1 },
          );
          // the job's record failed, not the answer
          await eventually("the evaluate job failed", () => job.getState(), { until: (state) => state === "failed" });
          const sent = replies.slice(before).map((r) => JSON.parse(r) as Record<string, unknown>);
          expect(sent).toEqual([
            {
              jobId: job.id,
              returnvalue: {
                items: { [taskId]: { resultsJson: { [HIVE]: expect.any(String) }, evaluationMs: expect.any(Number) } },
              },
            },
          ]);
        } finally {
          await h.database.pool.query(
            "DROP TRIGGER refuse_evaluation_rows ON task; DROP FUNCTION refuse_evaluation_rows()",
          );
        }
      });

      it("a refusal nobody received: the row is failed and says why", async () => {
        const ghost = "urn:li:dataset:(urn:li:dataPlatform:hive,ghost,PROD)";
        expect(await evaluateJob({ replyTo: `${listening}:gone`, urn: ghost })).toMatchObject({
          state: "failed",
          failedReason: `Entity ${ghost} does not exist`,
        });
      });
    });

    it.each([
      [{ urn: "not-a-urn" }, "Invalid urn in 'urn': 'not-a-urn'"],
      [{}, "urn: is required (an entity urn)"],
      [{ urn: HIVE, push: "yes" }, "push: must be true or false"],
      [{ urn: HIVE, force: true }, "unknown field(s) force"],
      [{ urn: HIVE, testUrns: [] }, "testUrns: must name at least one test"],
      [
        { urn: HIVE, testUrns: ["urn:li:test:owned"], tests: ["urn:li:test:owned"] },
        "give testUrns or its alias tests",
      ],
      [
        { urn: HIVE, tests: ["urn:li:test:owned", "urn:li:dataset:x"] },
        "Invalid urn in 'tests[1]': 'urn:li:dataset:x'",
      ],
    ])("refuses %p with a 400 naming the problem", async (body, message) => {
      const res = await evaluate(body);
      expect(res.status).toBe(400);
      expect(res.body.message).toContain(message);
    });

    it("answers 404 naming unknown entities and unknown tests", async () => {
      const ghost = "urn:li:dataset:(urn:li:dataPlatform:hive,ghost,PROD)";
      expect(await evaluate({ urn: ghost })).toMatchObject({
        status: 404,
        body: { code: "NOT_FOUND", message: `Entity ${ghost} does not exist` },
      });
      expect(
        await evaluate({ urn: HIVE, testUrns: ["urn:li:test:owned", "urn:li:test:x", "urn:li:test:y"] }),
      ).toMatchObject({
        status: 404,
        body: { message: "Tests urn:li:test:x, urn:li:test:y do not exist" },
      });
    });

    it("needs VIEW_TESTS, and MANAGE_TESTS to push", async () => {
      expect(await evaluate({ urn: HIVE }, NOBODY)).toMatchObject({
        status: 403,
        body: { message: `${NOBODY} is unauthorized to evaluate metadata tests.` },
      });
      expect((await evaluate({ urn: HIVE }, VIEWER)).status).toBe(200);
      expect(await evaluate({ urn: HIVE, push: true }, VIEWER)).toMatchObject({
        status: 403,
        body: { message: `${VIEWER} is unauthorized to push metadata test results.` },
      });
      expect(await storedResults(HIVE)).toBeUndefined();
      expect(await evaluate({ urn: USER, push: true }, MANAGER)).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("entity type corpuser has no testResults aspect") },
      });
    });

    it("answers requests that arrive together each on its own: results, a 404 and another caller's", async () => {
      const [hive, ghost, kafka, viewer] = await Promise.all([
        evaluate({ urn: HIVE, testUrns: ["urn:li:test:described"] }),
        evaluate({ urn: "urn:li:dataset:(urn:li:dataPlatform:hive,none,PROD)" }),
        evaluate({ urn: KAFKA, tests: ["urn:li:test:owned"] }),
        evaluate({ urn: CHART }, VIEWER),
      ]);
      expect(hive).toMatchObject({
        status: 200,
        body: { value: { urn: HIVE, passing: [{ test: "urn:li:test:described" }] } },
      });
      expect(ghost).toMatchObject({ status: 404 });
      expect(kafka).toMatchObject({
        status: 200,
        body: { value: { urn: KAFKA, passing: [{ test: "urn:li:test:owned" }] } },
      });
      expect(viewer).toMatchObject({
        status: 200,
        body: { value: { urn: CHART, passing: [{ test: "urn:li:test:chart-titled" }] } },
      });
    });

    it("honours an edit and a deletion in the very next evaluation", async () => {
      const urn = await createTest("edited", DESCRIBED_AS_ORDERS);
      const verdict = async () => {
        const value = await evaluation({ urn: HIVE });
        if (value.passing.some((r) => r.test === urn)) return "passing";
        if (value.failing.some((r) => r.test === urn)) return "failing";
        return "absent";
      };
      expect(await verdict()).toBe("passing");
      const input = (json: string) => ({ name: "edited", category: "x", definition: { json } });
      await gql(UPDATE, {
        urn,
        input: input(
          JSON.stringify({
            on: { types: ["dataset"] },
            rules: { property: "urn", operator: "contains_str", value: "kafka" },
          }),
        ),
      });
      expect(await verdict()).toBe("failing");
      await gql(UPDATE, { urn, input: { ...input(DESCRIBED_AS_ORDERS), state: "INACTIVE" } });
      expect(await verdict()).toBe("absent");
      await gql(UPDATE, { urn, input: { ...input(DESCRIBED_AS_ORDERS), state: "ACTIVE" } });
      expect(await verdict()).toBe("passing");
      await gql(DELETE, { urn });
      expect(await verdict()).toBe("absent");
      expect((await evaluate({ urn: HIVE, testUrns: [urn] })).status).toBe(404);
    });

    it("evaluates many entities with batchEvaluate, and names every unknown one", async () => {
      const res = await h.post(BATCH, { urns: [HIVE, CHART, HIVE], tests: ["urn:li:test:chart-titled"] }, asRoot);
      expect(res.status).toBe(200);
      const { results } = res.body.value as { results: Record<string, Evaluation> };
      expect(Object.keys(results).sort()).toEqual([CHART, HIVE].sort());
      expect(results[CHART]).toMatchObject({ passing: [{ test: "urn:li:test:chart-titled" }] });
      expect(results[HIVE]).toMatchObject({ notApplicable: ["urn:li:test:chart-titled"] });
      const missing = await h.post(BATCH, { urns: [HIVE, "urn:li:chart:a", "urn:li:chart:b"], push: false }, asRoot);
      expect(missing).toMatchObject({
        status: 404,
        body: { message: "Entities urn:li:chart:a, urn:li:chart:b do not exist" },
      });
      const bad = await h.post(BATCH, { urns: [HIVE, "oops"] }, asRoot);
      expect(bad).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("Invalid urn in 'urns[1]'") },
      });
    });
  });

  describe("pushed results", () => {
    const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.pushed,PROD)";
    beforeAll(async () => {
      await ingest([aspect(DATASET, "datasetProperties", { description: "orders pushed" })]);
    });

    it("stores results as testResults, merged with earlier results of other tests, readable afterwards", async () => {
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:described"] });
      expect(await storedResults(DATASET)).toEqual({
        passing: [{ test: "urn:li:test:described", type: "SUCCESS" }],
        failing: [],
      });
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:owned"] });
      const stored = (await storedResults(DATASET)) as { passing: unknown[]; failing: Array<{ test: string }> };
      expect(stored.passing).toEqual([{ test: "urn:li:test:described", type: "SUCCESS" }]);
      expect(stored.failing.map((f) => f.test)).toEqual(["urn:li:test:owned"]);
      const body = await gql(RESULTS, { urn: DATASET }, VIEWER);
      expect(body.data?.testResults).toEqual({
        passing: [{ type: "SUCCESS", test: { urn: "urn:li:test:described", name: "test described" } }],
        failing: [
          {
            type: "FAILURE",
            test: { urn: "urn:li:test:owned" },
            failedRules: [
              expect.objectContaining({ path: "rules.and[0]", property: "ownership.owners.owner", actual: [] }),
              expect.objectContaining({ path: "rules.and[1]" }),
            ],
          },
        ],
      });
      // The same outcome again writes no new version.
      const versions = () => h.prisma.aspect.count({ where: { urn: DATASET, aspectName: "testResults" } });
      const count = await versions();
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:owned"] });
      expect(await versions()).toBe(count);
    });

    it("answers null for an entity without results and NOT_FOUND for an unknown one", async () => {
      expect((await gql(RESULTS, { urn: KAFKA })).data).toEqual({ testResults: null });
      expect((await gql(RESULTS, { urn: "urn:li:chart:none" })).errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
      expect((await gql(RESULTS, { urn: KAFKA }, NOBODY)).errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    });

    it("serializes a push behind another one in flight for the same entity, so neither result is lost", async () => {
      const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.interleaved,PROD)";
      await ingest([aspect(target, "datasetProperties", { description: "interleaved" })]);
      const aspects = new AspectRepository();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      // Another push, mid-flight: it holds the aspect's lock and has written, but not yet committed, its result.
      const other = inTransaction(h.database.pool, async (client) => {
        await aspects.lock(client, [{ urn: target, aspectName: "testResults" }]);
        const value = { passing: [{ test: "urn:li:test:owned", type: "SUCCESS" }], failing: [] };
        await aspects.upsert(
          client,
          [{ urn: target, entityType: "dataset", aspectName: "testResults", valueJson: JSON.stringify(value) }],
          ROOT,
        );
        locked();
        await released;
      });
      await lockTaken;
      let answered = false;
      const push = evaluate({ urn: target, push: true, testUrns: ["urn:li:test:described"] }).then((res) => {
        answered = true;
        return res;
      });
      // Its push has reached the lock the other one holds (a session of this database waits on a lock) ...
      await eventually("the evaluation's push waiting on the lock", async () => {
        const waiting = await h.database.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      expect(answered).toBe(false); // ... and waits there, before reading what is stored
      release();
      await other;
      expect((await push).status).toBe(200);
      expect(await storedResults(target)).toEqual({
        passing: [
          { test: "urn:li:test:described", type: "SUCCESS" },
          { test: "urn:li:test:owned", type: "SUCCESS" },
        ],
        failing: [],
      });
    });

    it("loses nothing when many pushes for one entity run at once", async () => {
      const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.contended,PROD)";
      await ingest([aspect(target, "datasetProperties", { description: "contended" })]);
      const urns = await Promise.all(
        Array.from({ length: 12 }, (_, i) => createTest(`parallel-${i}`, HAS_DESCRIPTION)),
      );
      // Several rounds: each round's pushes race one another in the worker (concurrency 4) and in PostgreSQL.
      for (let round = 0; round < 3; round++) {
        const responses = await Promise.all(urns.map((urn) => evaluate({ urn: target, push: true, testUrns: [urn] })));
        expect(responses.map((r) => r.status)).toEqual(urns.map(() => 200));
      }
      const stored = (await storedResults(target)) as { passing: Array<{ test: string }> };
      expect(stored.passing.map((p) => p.test).sort()).toEqual([...urns].sort());
      for (const urn of urns) await gql(DELETE, { urn });
    });

    it("drops results of a test that was deleted, or that no longer applies: from every read at once, stored at the next push", async () => {
      const doomed = await createTest("doomed", HAS_DESCRIPTION);
      await evaluation({ urn: DATASET, push: true, testUrns: [doomed] });
      expect(JSON.stringify(await storedResults(DATASET))).toContain(doomed);
      await gql(DELETE, { urn: doomed });
      // Hidden at once from testResults and from the entity's aspects, and gone from the stored aspect at the next push.
      const shown = (await gql(RESULTS, { urn: DATASET })).data?.testResults as {
        passing: Array<{ test: { urn: string } }>;
      };
      expect(shown.passing.map((p) => p.test.urn)).toEqual(["urn:li:test:described"]);
      const read = (await storedResults(DATASET)) as { passing: Array<{ test: string }> };
      expect(read.passing.map((p) => p.test)).toEqual(["urn:li:test:described"]);
      expect(JSON.stringify(await rawTestResults(DATASET))).toContain(doomed);
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:hive-tagged"] });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain(doomed);
      // hive-tagged failed on this hive dataset; a kafka-only condition makes it not apply, so its result goes.
      await gql(UPDATE, {
        urn: "urn:li:test:hive-tagged",
        input: {
          name: "hive tagged",
          category: "x",
          definition: { json: HIVE_TAGGED.replace("urn:li:dataPlatform:hive", "urn:li:dataPlatform:kafka") },
        },
      });
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:hive-tagged"] });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain("hive-tagged");
      await gql(UPDATE, {
        urn: "urn:li:test:hive-tagged",
        input: { name: "hive tagged", category: "x", definition: { json: HIVE_TAGGED } },
      });
    });

    it("drops results of a test edited to select other entity types: from every read at once, stored at the next push", async () => {
      const retyped = await createTest("retyped", HAS_DESCRIPTION);
      await evaluation({ urn: DATASET, push: true, testUrns: [retyped] });
      expect(JSON.stringify(await storedResults(DATASET))).toContain(retyped);
      await gql(UPDATE, {
        urn: retyped,
        input: {
          name: "retyped",
          category: "x",
          definition: { json: HAS_DESCRIPTION.replace("[dataset]", "[chart]") },
        },
      });
      const shown = (await gql(RESULTS, { urn: DATASET })).data?.testResults as {
        passing: Array<{ test: { urn: string } }>;
      };
      expect(shown.passing.map((p) => p.test.urn)).not.toContain(retyped);
      expect(JSON.stringify(await storedResults(DATASET))).not.toContain(retyped);
      expect(JSON.stringify(await rawTestResults(DATASET))).toContain(retyped);
      // Without testUrns the edited test no longer runs on this dataset, so nothing else would ever remove its entry.
      await evaluation({ urn: DATASET, push: true });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain(retyped);
      await gql(DELETE, { urn: retyped });
    });
  });

  describe("runTest", () => {
    const N = 25;
    const datasetUrn = (i: number) =>
      `urn:li:dataset:(urn:li:dataPlatform:${i % 5 === 0 ? "hive" : "kafka"},run.t${String(i).padStart(2, "0")},PROD)`;
    beforeAll(async () => {
      await ingest(
        Array.from({ length: N }, (_, i) =>
          aspect(datasetUrn(i), "datasetProperties", i % 2 === 0 ? { description: "even" } : { name: "odd" }),
        ),
      );
    });

    it("evaluates every selected entity in batches, with progress in getTaskStatus and the queue dashboard", async () => {
      const datasets = await h.prisma.$queryRaw<Array<{ n: bigint }>>`
        SELECT count(DISTINCT urn) AS n FROM aspect WHERE entity_type = 'dataset'`;
      const total = Number(datasets[0]!.n);
      const res = await gql(RUN, { urn: "urn:li:test:described", batchSize: 10 });
      if (!res.data) throw new Error(JSON.stringify(res.errors));
      const taskId = res.data?.runTest as string;
      expect(taskId).toMatch(/^[0-9a-f-]{36}$/);
      const done = await waitForState(taskId, ["completed", "failed"]);
      const described = await h.prisma.$queryRaw<Array<{ n: bigint }>>`
        SELECT count(DISTINCT urn) AS n FROM aspect
         WHERE entity_type = 'dataset' AND aspect_name = 'datasetProperties' AND value ? 'description'`;
      const passing = Number(described[0]!.n);
      expect(done).toMatchObject({
        type: "EVALUATE_TESTS",
        state: "completed",
        request: { kind: "runTest", testUrn: "urn:li:test:described", push: true, batchSize: 10 },
        progress: {
          evaluated: total,
          total,
          passing,
          failing: total - passing,
          notApplicable: 0,
          percent: 100,
          batches: Math.ceil(total / 10),
        },
        result: { evaluated: total, passing, failing: total - passing },
        attemptsMade: 1,
      });
      for (let i = 0; i < N; i++) {
        const stored = JSON.stringify(await storedResults(datasetUrn(i)));
        expect(stored).toContain(
          i % 2 === 0 ? '"passing":[{"test":"urn:li:test:described"' : '"failing":[{"test":"urn:li:test:described"',
        );
      }
      // The dashboard shows the same progress (BullMQ's own copy of it).
      const redis = createRedis(h.config.REDIS_URL, "worker");
      const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
      const job = await queue.getJob(taskId);
      expect(job?.name).toBe("runTest");
      expect(job?.progress).toMatchObject({ evaluated: total, total, percent: 100 });
      await queue.close();
      await closeRedis(redis);
      const audit = await h.prisma.auditEvent.findFirst({ where: { action: "test.run" } });
      expect(audit).toMatchObject({ actorUrn: ROOT, targetUrn: "urn:li:test:described", details: { taskId } });
    });

    it("without push, walks every entity once in batches read ahead of their evaluation, with exact counts", async () => {
      const counted = await h.prisma.$queryRaw<Array<{ total: bigint; passing: bigint }>>`
        SELECT count(DISTINCT urn) AS total,
               count(DISTINCT urn) FILTER (WHERE aspect_name = 'datasetProperties' AND value ? 'description') AS passing
          FROM aspect WHERE entity_type = 'dataset'`;
      const total = Number(counted[0]!.total);
      const passing = Number(counted[0]!.passing);
      const before = await storedResults(datasetUrn(0));
      // Batches of 3: each batch after the first is read while the one before it is evaluated.
      const taskId = (await gql(RUN, { urn: "urn:li:test:described", push: false, batchSize: 3 })).data
        ?.runTest as string;
      const done = await waitForState(taskId, ["completed", "failed"]);
      expect(done).toMatchObject({
        state: "completed",
        progress: {
          evaluated: total,
          total,
          passing,
          failing: total - passing,
          notApplicable: 0,
          percent: 100,
          batches: Math.ceil(total / 3),
          pushed: 0,
        },
      });
      expect(await storedResults(datasetUrn(0))).toEqual(before); // nothing written without push
    });

    it("counts entities whose conditions do not hold as not applicable, and writes nothing without push", async () => {
      const urn = await createTest("run-hive", HIVE_TAGGED.replace("urn:li:tag:pii", "urn:li:tag:none"));
      const taskId = (await gql(RUN, { urn, push: false })).data?.runTest as string;
      const done = await waitForState(taskId, ["completed", "failed"]);
      const progress = done.progress as Record<string, number>;
      expect(done.state).toBe("completed");
      expect(progress.notApplicable).toBeGreaterThan(0);
      expect(progress.passing).toBe(0);
      expect(progress.failing! + progress.notApplicable!).toBe(progress.evaluated);
      expect(progress.batches).toBe(1);
      const pushed = await h.prisma.$queryRaw<Array<{ n: bigint }>>`
        SELECT count(*) AS n FROM aspect WHERE aspect_name = 'testResults' AND value::text LIKE ${`%${urn}%`}`;
      expect(Number(pushed[0]!.n)).toBe(0);
    });

    it("refuses callers without MANAGE_TESTS, unknown tests and bad batch sizes", async () => {
      expect((await gql(RUN, { urn: "urn:li:test:described" }, VIEWER)).errors?.[0]?.message).toBe(
        `${VIEWER} is unauthorized to run metadata tests.`,
      );
      expect((await gql(RUN, { urn: "urn:li:test:nope" })).errors?.[0]).toMatchObject({
        message: "Test urn:li:test:nope does not exist",
        extensions: { code: "NOT_FOUND" },
      });
      expect((await gql(RUN, { urn: "urn:li:test:described", batchSize: 0 })).errors?.[0]?.extensions?.code).toBe(
        "BAD_USER_INPUT",
      );
    });

    it("returns the same task for an identical run while it waits, and cancels a waiting run", async () => {
      await worker.close(); // nothing takes the job while we look at it
      try {
        const first = (await gql(RUN, { urn: "urn:li:test:owned" })).data?.runTest as string;
        const second = (await gql(RUN, { urn: "urn:li:test:owned" })).data?.runTest as string;
        expect(second).toBe(first);
        expect(await taskStatus(first)).toMatchObject({ state: "waiting" });
        const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId: first });
        expect(cancelled.body.value).toMatchObject({ state: "cancelled" });
      } finally {
        worker = await startEvaluationWorker(h);
      }
    });

    it("ends as failed a run whose job BullMQ gave up on, having stalled too often", async () => {
      await worker.close();
      try {
        const taskId = (await gql(RUN, { urn: "urn:li:test:owned", batchSize: 7 })).data?.runTest as string;
        // What BullMQ's stalled-job check writes on a job whose workers died during it once too often.
        const redis = createRedis(h.config.REDIS_URL, "producer");
        await whenReady(redis);
        await redis.hset(
          `${h.config.QUEUE_PREFIX}:${QUEUE_NAMES.evaluate}:${taskId}`,
          "defa",
          "job stalled more than allowable limit",
        );
        await closeRedis(redis);
        worker = await startEvaluationWorker(h);
        expect(await waitForState(taskId, ["failed", "completed"])).toMatchObject({
          state: "failed",
          failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
        });
      } finally {
        await worker.close();
        worker = await startEvaluationWorker(h);
      }
    });
  });
});

describe("metadata tests: evaluation timeout", () => {
  let h: Harness;
  let worker: RunningWorker | undefined;
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.slow,PROD)";

  beforeAll(async () => {
    h = await startGateway({ EVALUATE_TIMEOUT_MS: "300" });
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "slow" }) },
      systemClientHeaders(ROOT),
    );
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("answers 504 with the task id when no worker answers in time; getTaskStatus follows it to the end", async () => {
    const started = Date.now();
    const res = await h.post(EVALUATE, { urn: DATASET });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res).toMatchObject({
      status: 504,
      body: { status: 504, code: "GATEWAY_TIMEOUT", details: { taskId: expect.any(String) } },
    });
    const taskId = (res.body as { details: { taskId: string } }).details.taskId;
    expect(res.body.message).toContain(`task ${taskId}`);
    const status = async () =>
      (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
    expect(await status()).toMatchObject({ taskId, type: "EVALUATE_TESTS", state: "waiting" });

    // A second one, with push, is cancelled before any worker gets to it: it must then neither push nor complete.
    const created = await h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id: "slow",
          name: "slow",
          category: "x",
          definition: { json: "on: {types: [dataset]}\nrules: {property: urn, operator: exists}" },
        },
      },
      systemClientHeaders(ROOT),
    );
    expect(created.body.data).toEqual({ createTest: "urn:li:test:slow" });
    const pushed = await h.post(EVALUATE, { urn: DATASET, push: true });
    const cancelledId = (pushed.body as { details: { taskId: string } }).details.taskId;
    const cancel = await h.post("/gms/operations?action=cancelTask", { taskId: cancelledId });
    expect(cancel.body.value).toMatchObject({ state: "cancelled" });

    worker = await startEvaluationWorker(h);
    await eventually("the task completed", status, { timeoutMs: 15_000, until: (s) => s.state === "completed" });
    expect(await status()).toMatchObject({
      state: "completed",
      result: { results: { [DATASET]: { urn: DATASET, passing: [{ test: "urn:li:test:slow" }], failing: [] } } },
    });
    const after = await h.post("/gms/operations?action=getTaskStatus", { taskId: cancelledId });
    expect(after.body.value).toMatchObject({ state: "cancelled" });
    const stored = await h.prisma.aspect.count({ where: { urn: DATASET, aspectName: "testResults" } });
    expect(stored).toBe(0);
  });

  it("never shows a task cancelled whose results were pushed: one found past its start is only asked to stop", async () => {
    const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.contended,PROD)";
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(target, "datasetProperties", { description: "contended" }) },
      systemClientHeaders(ROOT),
    );
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    // Another push holds the entity's testResults lock, so this evaluation's push waits behind it, past its 504.
    const other = inTransaction(h.database.pool, async (client) => {
      await new AspectRepository().lock(client, [{ urn: target, aspectName: "testResults" }]);
      locked();
      await released;
    });
    await lockTaken;
    try {
      const res = await h.post(EVALUATE, { urn: target, push: true, testUrns: ["urn:li:test:slow"] });
      expect(res.status).toBe(504);
      const taskId = (res.body as { details: { taskId: string } }).details.taskId;
      const status = async () =>
        (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
      await eventually("the task active", status, { until: (s) => s.state === "active" });
      const cancel = await h.post("/gms/operations?action=cancelTask", { taskId });
      expect(cancel.body.value).toMatchObject({ state: "active", cancelRequested: true });
      release();
      await other;
      await eventually("the task no longer active", status, { until: (s) => s.state !== "active" });
      expect(await status()).toMatchObject({ state: "completed", cancelRequested: true });
      const entity = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(target)}`, {
        headers: systemClientHeaders(ROOT),
      });
      expect(await entity.json()).toMatchObject({
        value: { aspects: { testResults: { passing: [{ test: "urn:li:test:slow" }] } } },
      });
    } finally {
      release();
      await other;
    }
  });
});

describe("metadata tests: evaluations past the worker's limits", () => {
  let h: Harness;
  let worker: RunningWorker;
  /** plain data, evaluated at once */
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.plain,PROD)";
  /** 20,000 tags: what the hog test scans, and what makes it slow (first in urn order) */
  const HOG = "urn:li:dataset:(urn:li:dataPlatform:hive,db.hog,PROD)";
  const TIME_LIMIT_MS = 1000;
  const asRoot = systemClientHeaders(ROOT);
  const createTest = (id: string, rules: unknown) =>
    h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id,
          name: id,
          category: "x",
          definition: { json: JSON.stringify({ on: { types: ["dataset"] }, rules }) },
        },
      },
      asRoot,
    );
  const stoppedAt = (test: string, urn: string) =>
    `Evaluation of test ${test} on ${urn} stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS)`;
  const waitForEnd = (taskId: string) =>
    eventually(
      `task ${taskId} ended`,
      async () =>
        (await h.post("/gms/operations?action=getTaskStatus", { taskId }, asRoot)).body.value as Record<
          string,
          unknown
        >,
      { timeoutMs: 15_000, until: (status) => status.state !== "waiting" && status.state !== "active" },
    );

  beforeAll(async () => {
    h = await startGateway({ EVALUATION_TIME_LIMIT_MS: String(TIME_LIMIT_MS) });
    worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, USER, ["VIEW_TESTS"]);
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "plain" }) },
      asRoot,
    );
    // Written straight to the table: 2 MB of tags is more than one ingestion request may carry (1 MiB).
    const tags = Array.from({ length: 20_000 }, (_, i) => ({ tag: `urn:li:tag:${"t".repeat(80)}${i}` }));
    await h.database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, 'globalTags', 0, 'dataset', $2::jsonb, $3)`,
      [HOG, JSON.stringify({ tags }), ROOT],
    );
    // A legal definition (within every definition limit: 150 predicates of 40 short operands, ~50 KB) whose
    // evaluation on HOG takes seconds: 150 × 40 substrings searched in 20,000 tags. regex_match cannot be the slow
    // case any more: it runs on RE2, in linear time.
    const created = await createTest("hog", {
      or: Array.from({ length: 150 }, (_, i) => ({
        property: "globalTags.tags.tag",
        operator: "contains_str",
        values: Array.from({ length: 40 }, (_, j) => `${i.toString(36)}!${j.toString(36)}`),
      })),
    });
    expect(created.body).toEqual({ data: { createTest: "urn:li:test:hog" } });
    await createTest("described", { property: "datasetProperties.description", operator: "exists" });
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("stops the evaluation at EVALUATION_TIME_LIMIT_MS with a 400 naming it, and the worker goes on serving", async () => {
    const started = Date.now();
    const res = await h.post(EVALUATE, { urn: HOG, testUrns: ["urn:li:test:hog"] }, asRoot);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(res).toMatchObject({
      status: 400,
      body: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
    });

    const next = await h.post(EVALUATE, { urn: DATASET, testUrns: ["urn:li:test:described"] }, asRoot);
    expect(next).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
  });

  it("answers other callers' requests batched with a slow one at once, not when the slow one is stopped", async () => {
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const timed = async (urn: string, testUrns: string[], actor: string) => {
        const started = performance.now();
        const res = await h.post(EVALUATE, { urn, testUrns }, systemClientHeaders(actor));
        return { res, ms: performance.now() - started };
      };
      // Two callers with the same privileges, each read once before, so that their requests take as many turns of
      // the gateway's event loop to reach the batcher.
      // Five at once also leave five idle connections, so that no request below waits for a connection to open.
      await Promise.all(
        [VIEWER, USER, USER, USER, USER].map((actor) => timed(DATASET, ["urn:li:test:described"], actor)),
      );
      // Sent in one turn of the event loop, so the gateway reads them together and puts them into one job.
      const hog = timed(HOG, ["urn:li:test:hog"], VIEWER);
      const harmless = Array.from({ length: 4 }, () => timed(DATASET, ["urn:li:test:described"], USER));
      const answers = await Promise.all(harmless);
      for (const { res } of answers) {
        expect(res).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
      }
      // A few ms unloaded: bounded at half the hog's limit, which a wait for the hog (which answered them only after
      // TIME_LIMIT_MS before) cannot meet; a third was met with 1 ms to spare on a loaded machine.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(TIME_LIMIT_MS / 2);
      const { res, ms } = await hog;
      expect(ms).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
      expect(res).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
      });
      // The hog and the others were once one job, which held every answer until the hog was stopped. Now each request
      // is answered on its own, and another actor's requests never share the hog's job at all (a job holds its worker
      // slot until its slowest request ends; slots are shared by actor).
      const jobs = await queue.getJobs(["completed"]);
      const hogJob = jobs.find((j) => (j.data as EvaluatePayload).items?.some((i) => i.urns.includes(HOG)));
      expect((hogJob?.data as EvaluatePayload).items.filter((i) => i.actorUrn === USER)).toEqual([]);
    } finally {
      await queue.close();
      await closeRedis(redis);
    }
  });

  it("refuses only the slow request of a job, answering the others first", async () => {
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const subscriber = createRedis(h.config.REDIS_URL, "subscriber");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const channel = `replies-${randomUUID()}`;
      const replies: Array<{ items: Record<string, unknown>; partial?: true }> = [];
      let allReplied = () => {};
      const all = new Promise<void>((resolve) => (allReplied = resolve));
      await whenReady(subscriber);
      await subscribeToReplies(subscriber, channel, (m) => {
        const { returnvalue } = JSON.parse(m) as { returnvalue: (typeof replies)[number] };
        replies.push(returnvalue);
        if (!returnvalue.partial) allReplied();
      });
      const [slow, quick] = [randomUUID(), randomUUID()];
      // Two actors (as a gateway of an earlier version could batch them): one actor's slow request holds one of the
      // worker's threads, and with two threads that is its share, so another actor's request takes the other.
      const item = (taskId: string, urn: string, test: string, actorUrn: string) => ({
        taskId,
        urns: [urn],
        push: false,
        testUrns: [test],
        actorUrn,
      });
      await queue.add(
        "evaluate",
        {
          kind: "evaluate",
          items: [item(slow, HOG, "urn:li:test:hog", VIEWER), item(quick, DATASET, "urn:li:test:described", USER)],
          replyTo: channel,
          waitMs: 30_000,
        },
        { jobId: randomUUID() },
      );
      await all;
      expect(replies.map((r) => Object.keys(r.items))).toEqual([[quick], [slow]]);
      expect(replies[0]!.partial).toBe(true);
      expect(replies[1]!.items[slow]).toEqual({
        refused: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
        evaluationMs: expect.any(Number),
      });
      const { resultsJson } = replies[0]!.items[quick] as { resultsJson: Record<string, string> };
      expect(JSON.parse(resultsJson[DATASET]!)).toMatchObject({ passing: [{ test: "urn:li:test:described" }] });
    } finally {
      await queue.close();
      await closeRedis(subscriber);
      await closeRedis(redis);
    }
  });

  it("fails a runTest at the batch that ran too long, saying how far it got", async () => {
    const run = await h.graphql(RUN, { urn: "urn:li:test:hog", push: false }, asRoot);
    const taskId = (run.body.data as { runTest: string }).runTest;
    const status = await waitForEnd(taskId);
    expect(status).toMatchObject({ state: "failed" });
    expect(status.failedReason).toContain(`stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS)`);
    expect(status.failedReason).toContain("0 entities were evaluated before it.");
  });

  it("stops an impact preview at EVALUATION_TIME_LIMIT_MS too, in the worker, naming the limit", async () => {
    const started = Date.now();
    const described = JSON.stringify({
      on: { types: ["dataset"] },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
    const res = await h.graphql(
      `query($j: String!) { previewTestImpact(urn: "urn:li:test:hog", definition: {json: $j}) { sampled } }`,
      { j: described },
      asRoot,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
    expect(res.body.errors?.[0]).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: expect.stringContaining(`stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS) for a preview of`),
    });
    expect(res.body.errors?.[0]?.message).toContain("Preview fewer entities (sampleSize).");
  });

  describe("a stored definition past a definition limit (a row written before the limit existed)", () => {
    // 40 dot-separated segments: the limit is 32 (DEFINITION_LIMITS), so createTest would refuse it.
    const property = Array.from({ length: 40 }, (_, i) => `s${i}`).join(".");
    const OLD = "urn:li:test:old";
    beforeAll(async () => {
      await h.prisma.metadataTest.create({
        data: {
          urn: OLD,
          name: "old",
          category: "x",
          definitionText: JSON.stringify({ on: { types: ["dataset"] }, rules: { property, operator: "exists" } }),
          definition: { on: { types: ["dataset"] }, rules: { property, operator: "exists" } },
          onTypes: ["dataset"],
          createdBy: ROOT,
          ownerUrn: ROOT,
        },
      });
    });
    afterAll(async () => {
      await h.prisma.metadataTest.delete({ where: { urn: OLD } });
    });
    const refusal = `Test ${OLD} cannot be evaluated: its stored definition is refused. Failed to validate test definition: rules.property: 40 dot-separated segments, more than the limit of 32`;

    it("is a 400 naming the test and the limit, at once: no retries, and the others batched with it answered", async () => {
      const started = performance.now();
      const [old, other] = await Promise.all([
        h.post(EVALUATE, { urn: DATASET, testUrns: [OLD] }, asRoot),
        h.post(EVALUATE, { urn: DATASET, testUrns: ["urn:li:test:described"] }, systemClientHeaders(VIEWER)),
      ]);
      // A failure would be retried 5 times, 0.25 to 4 s apart (7.75 s), then answered 500.
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(old).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining(refusal) },
      });
      expect(other).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
      // Evaluating the ACTIVE tests of a dataset needs it too: refused the same way.
      const active = await h.post(EVALUATE, { urn: DATASET }, asRoot);
      expect(active).toMatchObject({ status: 400, body: { message: expect.stringContaining(refusal) } });
    });

    it("fails a runTest of it at once, saying why, without retrying", async () => {
      const run = await h.graphql(RUN, { urn: OLD, push: false }, asRoot);
      const taskId = (run.body.data as { runTest: string }).runTest;
      const status = await waitForEnd(taskId);
      expect(status).toMatchObject({ state: "failed", failedReason: expect.stringContaining(refusal) });
      expect(status.attemptsMade).toBe(1);
    });
  });
});

describe("metadata tests: an answer that never reaches the gateway", () => {
  /**
   * The gateway's wait: the job must end within it, less the second the worker allows for clocks (so that it writes
   * no row), for the 504's row to be the gateway's to end. 3 s left the job too little on a loaded machine (it ended
   * after 2 s, so its worker kept the answer, and the task ended completed: the answer that never reached a gateway).
   */
  const WAIT_MS = 6000;
  let h: Harness;
  let worker: RunningWorker;
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.lost,PROD)";

  beforeAll(async () => {
    h = await startGateway({ EVALUATE_TIMEOUT_MS: String(WAIT_MS) });
    worker = await startEvaluationWorker(h, 4, { loseReplies: true });
    // The condition the test needs, waited for rather than assumed: a worker that answers at once. Its first job
    // waits for the threads to load their modules, which on a loaded machine took longer than the gateway's wait.
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const jobId = randomUUID();
      await queue.add(
        "evaluate",
        {
          kind: "evaluate",
          items: [{ taskId: randomUUID(), urns: ["urn:li:corpuser:nobody"], push: false, actorUrn: ROOT }],
          replyTo: `replies-${randomUUID()}`,
          waitMs: 30_000,
        },
        { jobId },
      );
      await eventually("the warm-up job completed", () => queue.getJobState(jobId), {
        timeoutMs: 30_000,
        until: (state) => state === "completed",
      });
    } finally {
      await queue.close();
      await closeRedis(redis);
    }
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "lost" }) },
      systemClientHeaders(ROOT),
    );
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("ends the 504's task as failed, saying why, rather than waiting for good", async () => {
    // The job ends well within the wait, so its worker writes no row; its reply is lost on the way.
    const res = await h.post(EVALUATE, { urn: DATASET }, systemClientHeaders(ROOT));
    expect(res).toMatchObject({ status: 504, body: { details: { taskId: expect.any(String) } } });
    const { taskId } = (res.body as { details: { taskId: string } }).details;
    const status = await h.post("/gms/operations?action=getTaskStatus", { taskId }, systemClientHeaders(ROOT));
    expect(status.body.value).toMatchObject({
      state: "failed",
      failedReason: expect.stringContaining("its answer reached the gateway after the caller's timeout"),
    });
  });
});
