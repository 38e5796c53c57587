/**
 * DataHub's metadata tests UI (docs/datahub-clients.md) against the real gateway and an evaluation worker (PostgreSQL,
 * Redis, BullMQ): validateTest, Test.results and runTestDefinition, each sent as DataHub's clients send it where their
 * documents are known (fixtures/datahub/smoke-tests.graphql, terraform-metadata-tests.graphql), and as
 * tests-ui-inferred.graphql writes them where they are not.
 */
import { DEFINITION_LIMITS } from "@mdp/metadata-tests";
import { ROOT, systemClientHeaders } from "./support/gateway-harness";
import {
  SMOKE_TEST_CATEGORY,
  SMOKE_TEST_DEFINITION_JSON,
  SMOKE_TEST_DESCRIPTION,
  SMOKE_TEST_NAME,
  smokeCreateTestVariables,
  terraformValidateVariables,
  webAppRunTestDefinitionVariables,
} from "./fixtures/datahub/requests-tests";
import {
  SMOKE,
  TERRAFORM,
  UI,
  DESCRIBED,
  BARE,
  CHART,
  HOG,
  VIEWER,
  MANAGER,
  TESTER,
  TIME_LIMIT_MS,
  definition,
  HAS_DESCRIPTION,
  PII_TAG,
  TAGS_UNDESCRIBED,
} from "./support/datahub-tests-ui";
import { startTestsUiHarness } from "./support/datahub-tests-ui-harness";

describe("DataHub's metadata tests UI operations", () => {
  const ui = startTestsUiHarness();
  const { asRoot, frontend, tagsOf, countRows, runTest } = ui;

  describe("validateTest (the Terraform provider's document)", () => {
    it("answers isValid for a definition createTest accepts, and saves nothing", async () => {
      const before = await countRows("metadata_test");
      const res = await ui.gateway.graphql(
        TERRAFORM.validateTest!,
        terraformValidateVariables(HAS_DESCRIPTION),
        asRoot,
      );
      expect(res.body).toEqual({ data: { validateTest: { isValid: true, messages: [] } } });
      expect(await countRows("metadata_test")).toBe(before);
    });

    it("answers each problem as a message naming where it is, as createTest would refuse it", async () => {
      const badOperator = definition({ property: "x", operator: "no_such_op" });
      const operatorAnswer = await ui.gateway.graphql(
        TERRAFORM.validateTest!,
        terraformValidateVariables(badOperator),
        asRoot,
      );
      expect(operatorAnswer.body.data!.validateTest).toEqual({
        isValid: false,
        messages: [expect.stringMatching(/^rules\.operator: unknown operator 'no_such_op'/)],
      });
      const json = JSON.stringify({ on: { types: ["datasett"] }, rules: { property: "x", operator: "exists" } });
      const res = await ui.gateway.graphql(TERRAFORM.validateTest!, terraformValidateVariables(json), asRoot);
      const result = res.body.data!.validateTest as { isValid: boolean; messages: string[] };
      expect(result.isValid).toBe(false);
      expect(result.messages).toEqual([expect.stringMatching(/^on\.types\[0\]: unknown entity type 'datasett'/)]);
      const created = await ui.gateway.graphql(
        SMOKE.createTest!,
        { input: { id: "refused", name: "r", category: "c", definition: { json } } },
        asRoot,
      );
      expect(created.body.errors?.[0]?.message).toContain("on.types[0]: unknown entity type 'datasett'");
    });

    it("applies createTest's limits: a definition over DEFINITION_LIMITS.bytes is not valid, naming the limit", async () => {
      const json = definition({
        property: "datasetProperties.description",
        operator: "equals",
        value: "x".repeat(DEFINITION_LIMITS.bytes),
      });
      const res = await ui.gateway.graphql(TERRAFORM.validateTest!, terraformValidateVariables(json), asRoot);
      expect(res.body.data!.validateTest).toEqual({
        isValid: false,
        messages: [expect.stringContaining(`more than the limit of ${DEFINITION_LIMITS.bytes}`)],
      });
    });
  });

  describe("Test.results (the smoke tests' documents, through the frontend's proxy)", () => {
    it("creates the smoke test's test, answers its definition as sent and counts what passes and fails it", async () => {
      const testId = `test-create-id_${Math.floor(Date.now() / 1000)}`;
      const created = await ui.gateway.graphql(SMOKE.createTest!, smokeCreateTestVariables(testId), frontend(ROOT));
      expect(created.body).toEqual({ data: { createTest: `urn:li:test:${testId}` } });
      const urn = `urn:li:test:${testId}`;
      const read = async () => (await ui.gateway.graphql(SMOKE.test!, { urn }, frontend(ROOT))).body;
      expect(await read()).toEqual({
        data: {
          test: {
            urn,
            name: SMOKE_TEST_NAME,
            category: SMOKE_TEST_CATEGORY,
            description: SMOKE_TEST_DESCRIPTION,
            definition: { json: SMOKE_TEST_DEFINITION_JSON },
            results: { passingCount: 0, failingCount: 0 },
          },
        },
      });

      // Run over every dataset: DESCRIBED and HOG pass, BARE fails.
      expect(await runTest(urn, true)).toMatchObject({ state: "completed" });
      expect((await read()).data!.test).toMatchObject({ results: { passingCount: 2, failingCount: 1 } });

      // The test edited away from datasets: their results no longer stand, nor are they counted.
      const updated = await ui.gateway.graphql(
        SMOKE.updateTest!,
        {
          urn,
          input: {
            name: "new name",
            category: "new category",
            description: "new description",
            definition: {
              json: JSON.stringify({
                on: { types: ["chart"] },
                rules: { property: "chartInfo.title", operator: "exists" },
              }),
            },
          },
        },
        frontend(ROOT),
      );
      expect(updated.body).toEqual({ data: { updateTest: urn } });
      expect((await read()).data!.test).toMatchObject({ results: { passingCount: 0, failingCount: 0 } });
    });
  });

  describe("runTestDefinition (the web app's 'Try your test')", () => {
    it("answers PASS, FAIL and NONE for a definition that is not saved, as the web app sends it", async () => {
      const tests = await countRows("metadata_test");
      const status = async (urn: string, json: string) => {
        const res = await ui.gateway.graphql(
          UI.runTestDefinition!,
          webAppRunTestDefinitionVariables(urn, json),
          frontend(MANAGER),
        );
        expect(res.body.errors).toBeUndefined();
        return (res.body.data!.runTestDefinition as { status: string }).status;
      };
      expect(await status(DESCRIBED, HAS_DESCRIPTION)).toBe("PASS");
      expect(await status(BARE, HAS_DESCRIPTION)).toBe("FAIL");
      expect(await status(CHART, HAS_DESCRIPTION)).toBe("NONE");
      expect(await countRows("metadata_test")).toBe(tests);
    });

    it("EVALUATE_ONLY writes nothing; DEFAULT applies the definition's actions for the caller, storing no result", async () => {
      const run = (mode: string, actor = MANAGER) =>
        ui.gateway.graphql(
          `mutation($u: String!, $t: TestDefinitionInput!, $m: TestEvaluationMode) {
             runTestDefinition(urn: $u, test: $t, mode: $m) { status }
           }`,
          { u: BARE, t: { json: TAGS_UNDESCRIBED }, m: mode },
          systemClientHeaders(actor),
        );
      const aspects = await countRows("aspect");
      const history = await countRows("test_result_transition");
      const testResultsVersions = async () =>
        Number(
          (
            await ui.gateway.database.pool.query<{ n: string }>(
              `SELECT count(*) AS n FROM aspect WHERE aspect_name = 'testResults'`,
            )
          ).rows[0]!.n,
        );
      const results = await testResultsVersions();
      // A viewer may not try at all: a definition of its own would answer, PASS or FAIL, any question about the
      // entity's values (a regex per character), which VIEW_TESTS does not let it read.
      expect((await run("EVALUATE_ONLY", VIEWER)).body.errors?.[0]).toMatchObject({
        extensions: { code: "FORBIDDEN" },
        message: expect.stringContaining("unauthorized to try metadata test definitions"),
      });
      expect((await run("EVALUATE_ONLY", TESTER)).body).toEqual({ data: { runTestDefinition: { status: "FAIL" } } });
      expect(await countRows("aspect")).toBe(aspects);
      expect(await tagsOf(BARE)).toEqual(["urn:li:tag:other"]);

      // Who lacks the actions' privileges may try, not apply.
      expect((await run("DEFAULT", TESTER)).body.errors?.[0]).toMatchObject({
        extensions: { code: "FORBIDDEN" },
        message: expect.stringContaining("unauthorized to apply these test actions"),
      });
      expect((await run("DEFAULT")).body).toEqual({ data: { runTestDefinition: { status: "FAIL" } } });
      expect(await tagsOf(BARE)).toEqual(["urn:li:tag:other", PII_TAG]);
      // No testResults for a test that does not exist, and no history.
      expect(await testResultsVersions()).toBe(results);
      expect(await countRows("test_result_transition")).toBe(history);
      const audit = await ui.gateway.prisma.auditEvent.findFirst({
        where: { action: "test.actions", targetUrn: BARE },
      });
      expect(audit).toMatchObject({ actorUrn: MANAGER, details: expect.objectContaining({ unsaved: true }) });
    });

    it("refuses a definition createTest would refuse, naming the field", async () => {
      const res = await ui.gateway.graphql(
        UI.runTestDefinition!,
        webAppRunTestDefinitionVariables(BARE, '{"on": {"types": ["dataset"]}}'),
        frontend(MANAGER),
      );
      expect(res.body.errors?.[0]).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: expect.stringContaining("Failed to validate test definition"),
      });
    });

    it("runs in the evaluation worker under EVALUATION_TIME_LIMIT_MS, the gateway answering others meanwhile", async () => {
      // 2 MB of tags, written straight to the table (more than one ingestion request may carry), and a legal
      // definition whose evaluation on it takes seconds (as metadata-tests-limits.int.spec.ts's time limit test).
      const tags = Array.from({ length: 20_000 }, (_, i) => ({ tag: `urn:li:tag:${"t".repeat(80)}${i}` }));
      await ui.gateway.database.pool.query(
        `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
         VALUES ($1, 'globalTags', 0, 'dataset', $2::jsonb, $3)`,
        [HOG, JSON.stringify({ tags }), ROOT],
      );
      const slow = definition({
        or: Array.from({ length: 150 }, (_, i) => ({
          property: "globalTags.tags.tag",
          operator: "contains_str",
          values: Array.from({ length: 40 }, (_, j) => `${i.toString(36)}!${j.toString(36)}`),
        })),
      });
      let settled = false;
      const trying = ui.gateway
        .graphql(UI.runTestDefinition!, webAppRunTestDefinitionVariables(HOG, slow), frontend(MANAGER))
        .finally(() => (settled = true));
      // Answered while the evaluation runs: it is not on the gateway's event loop.
      const me = await ui.gateway.graphql("{ me { urn } }", {}, asRoot);
      expect(me.body.data).toEqual({ me: { urn: ROOT } });
      expect(settled).toBe(false);
      const res = await trying;
      expect(res.body.errors?.[0]).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: expect.stringContaining(`stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS)`),
      });
    });
  });
});
