/**
 * Who pushed an entity's test results, over real HTTP and PostgreSQL.
 */
import { eventually } from "@mdp/core/testing";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { proposal } from "./support/metadata-proposals";

describe("who pushed test results", () => {
  let h: Harness;
  let worker: RunningWorker;
  const PUSHER = "urn:li:corpuser:results-pusher";
  const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.pushed,PROD)";
  const stampsOf = async (entity: string) => {
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(entity)}`, {
      headers: systemClientHeaders(ROOT),
    });
    return ((await res.json()) as { value: { stamps: Record<string, unknown> } }).value.stamps;
  };

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h, 2, { threads: 1 });
    // what the tagging test's action writes, should the pusher's own privileges be asked for too
    await grant(h, PUSHER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    const ingest = await h.post("/gms/aspects?action=ingestProposal", {
      proposal: proposal({ entityUrn: urn }),
    });
    expect(ingest.status).toBe(200);
    const created = await h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id: "described",
          name: "described",
          category: "Quality",
          definition: {
            json: JSON.stringify({
              on: { types: ["dataset"] },
              rules: { property: "datasetProperties.description", operator: "exists" },
            }),
          },
        },
      },
      systemClientHeaders(ROOT),
    );
    expect(created.body.errors).toBeUndefined();
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("an evaluation pushed with an access token stamps testResults with its caller and that token", async () => {
    const { token, id } = await createToken(h, PUSHER);
    const res = await h.post("/gms/test?action=evaluate", { urn, push: true }, bearer(token));
    expect(res.status).toBe(200);
    expect((await stampsOf(urn)).testResults).toEqual({
      version: 1,
      created: { time: expect.any(Number), actor: PUSHER },
      createdVia: id,
    });
  });

  it("the aspects a pushed result's test actions write are stamped with the caller and its token too", async () => {
    const tagged = "urn:li:dataset:(urn:li:dataPlatform:hive,db.tagged,PROD)";
    expect(
      (await h.post("/gms/aspects?action=ingestProposal", { proposal: proposal({ entityUrn: tagged }) })).status,
    ).toBe(200);
    const created = await h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id: "tagging",
          name: "tagging",
          category: "Quality",
          definition: {
            json: JSON.stringify({
              on: { types: ["dataset"] },
              rules: { property: "datasetProperties.description", operator: "exists" },
              actions: { passing: [{ type: "ADD_TAGS", values: ["urn:li:tag:described"] }] },
            }),
          },
        },
      },
      systemClientHeaders(ROOT),
    );
    expect(created.body.errors).toBeUndefined();
    const { token, id } = await createToken(h, PUSHER);
    const res = await h.post(
      "/gms/test?action=evaluate",
      { urn: tagged, push: true, testUrns: ["urn:li:test:tagging"] },
      bearer(token),
    );
    expect(res.status).toBe(200);
    const stamp = { version: 1, created: { time: expect.any(Number), actor: PUSHER }, createdVia: id };
    expect(await stampsOf(tagged)).toMatchObject({ testResults: stamp, globalTags: stamp });
  });

  it("a test run's pushes are stamped with the user who asked for the run and the token it used", async () => {
    const other = "urn:li:dataset:(urn:li:dataPlatform:hive,db.run,PROD)";
    expect(
      (await h.post("/gms/aspects?action=ingestProposal", { proposal: proposal({ entityUrn: other }) })).status,
    ).toBe(200);
    const { token, id } = await createToken(h, PUSHER);
    const run = await h.graphql(
      `mutation($urn: String!) { runTest(urn: $urn, push: true) }`,
      { urn: "urn:li:test:described" },
      bearer(token),
    );
    expect(run.body.errors).toBeUndefined();
    const taskId = run.body.data!.runTest as string;
    const state = await eventually(
      "runTest's task ended",
      async () =>
        ((await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as { state: string }).state,
      { timeoutMs: 20_000, until: (s) => s === "completed" || s === "failed" },
    );
    expect(state).toBe("completed");
    expect((await stampsOf(other)).testResults).toEqual({
      version: 1,
      created: { time: expect.any(Number), actor: PUSHER },
      createdVia: id,
    });
  });
});
