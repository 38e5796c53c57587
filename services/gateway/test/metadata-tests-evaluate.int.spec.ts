/**
 * evaluate and batchEvaluate against the real gateway over HTTP, a real BullMQ evaluation worker in process, real
 * PostgreSQL: which tests run (selection, named tests, INACTIVE ones), which rules failed, refusals (400, 404),
 * privileges, requests answered each on its own, edits honoured by the very next evaluation, and the queue dashboard's
 * summary. The rows the worker writes for evaluations are tested in the worker alone
 * (services/evaluation-worker/test/evaluate-task-rows.int.spec.ts).
 */
import { Queue } from "bullmq";
import { closeRedis, createRedis, QUEUE_NAMES } from "@mdp/queues";
import {
  HAS_DESCRIPTION,
  HAS_OWNER,
  BATCH,
  CHART,
  CHART_TITLED,
  DELETE,
  DESCRIBED_AS_ORDERS,
  HIVE,
  HIVE_TAGGED,
  KAFKA,
  MANAGER,
  NOBODY,
  UPDATE,
  USER,
  VIEWER,
  metadataTestsSetup,
  type Evaluation,
} from "./support/metadata-tests";
import type { Harness } from "./support/gateway-harness";

describe("metadata tests", () => {
  const { ctx, asRoot, gql, createTest, evaluate, evaluation, storedResults } = metadataTestsSetup([
    ["described", HAS_DESCRIPTION],
    ["owned", HAS_OWNER],
  ]);
  let h: Harness;
  beforeAll(() => {
    h = ctx.h;
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
});
