/**
 * The gateway and evaluation worker the DataHub tests UI tests run against (datahub-tests-ui-*.int.spec.ts), with
 * their users' grants and the entities they evaluate, set up in beforeAll and closed in afterAll, and the helpers
 * those tests call. Call it once inside a describe; `gateway` and `worker` are set by the time the tests run.
 */
import { eventually } from "@mdp/core/testing";
import { frontendProxyHeaders } from "../fixtures/datahub/requests";
import { startEvaluationWorker, type RunningWorker } from "./evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./gateway-harness";
import { SMOKE, DESCRIBED, BARE, CHART, HOG, VIEWER, MANAGER, TESTER, TIME_LIMIT_MS, aspect } from "./datahub-tests-ui";

export function startTestsUiHarness() {
  const asRoot = systemClientHeaders(ROOT);
  const ui = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    worker: undefined as unknown as RunningWorker,
    asRoot,
    /** As the web app and the smoke tests reach GMS: the frontend's proxy, with the system client and the user. */
    frontend: (user: string) => {
      // The harness sets the content type itself.
      const { "Content-Type": _json, ...headers } = frontendProxyHeaders(
        ui.gateway.config.SYSTEM_CLIENT_ID,
        ui.gateway.config.SYSTEM_CLIENT_SECRET,
        user,
      );
      return headers;
    },
    tagsOf: async (urn: string) =>
      (
        await ui.gateway.database.pool.query<{ value: { tags: Array<{ tag: string }> } }>(
          `SELECT value FROM aspect WHERE urn = $1 AND aspect_name = 'globalTags' ORDER BY version DESC LIMIT 1`,
          [urn],
        )
      ).rows[0]?.value.tags.map((t) => t.tag) ?? [],
    countRows: async (table: "metadata_test" | "aspect" | "test_result_transition") =>
      Number((await ui.gateway.database.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n),
    createTest: async (id: string, json: string, extra: Record<string, unknown> = {}) => {
      const res = await ui.gateway.graphql(
        SMOKE.createTest!,
        { input: { id, name: id, category: "ui", definition: { json }, ...extra } },
        asRoot,
      );
      expect(res.body.errors).toBeUndefined();
      return res.body.data!.createTest as string;
    },
    runTest: async (urn: string, push: boolean) => {
      const res = await ui.gateway.graphql(
        `mutation($u: String!, $p: Boolean) { runTest(urn: $u, push: $p) }`,
        { u: urn, p: push },
        asRoot,
      );
      const taskId = res.body.data!.runTest as string;
      return eventually(
        `run ${taskId} completed`,
        async () =>
          (await ui.gateway.post("/gms/operations?action=getTaskStatus", { taskId }, asRoot)).body.value as {
            state: string;
          },
        { timeoutMs: 20_000, until: (s) => s.state === "completed" || s.state === "failed" },
      );
    },
  };

  beforeAll(async () => {
    const h = (ui.gateway = await startGateway({ EVALUATION_TIME_LIMIT_MS: String(TIME_LIMIT_MS) }));
    ui.worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, MANAGER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    await grant(h, TESTER, ["MANAGE_TESTS"]);
    const res = await h.post(
      "/gms/aspects?action=ingestProposalBatch",
      {
        proposals: [
          aspect(DESCRIBED, "datasetProperties", { description: "Described" }),
          aspect(BARE, "globalTags", { tags: [{ tag: "urn:li:tag:other" }] }),
          aspect(CHART, "chartInfo", { title: "A chart" }),
          aspect(HOG, "datasetProperties", { description: "plain" }),
        ],
      },
      asRoot,
    );
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await ui.worker?.close();
    await ui.gateway?.close();
  });
  return ui;
}
