/**
 * Authorization of metadata and of tasks, over real HTTP and PostgreSQL: reading metadata needs GET_ENTITY or
 * GET_TIMESERIES_ASPECT, aspects only the service writes (testResults) cannot be ingested by anybody, a caller lacking
 * a privilege gets the same answer whether the thing asked about exists or not, and a malformed X-Platform-Actor
 * beside a token is bad input.
 */
import { randomUUID } from "node:crypto";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
  type HttpBody,
} from "./support/gateway-harness";

const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.secret,PROD)";
const UNKNOWN_DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.nothing,PROD)";
const NOBODY = "urn:li:corpuser:nobody"; // holds no privilege
const INGESTER = "urn:li:corpuser:ingester"; // INGEST_METADATA and VIEW_TESTS: writes, but may not read entities
const READER = "urn:li:corpuser:reader"; // GET_ENTITY, granted under DataHub's spelling GET_ENTITY_PRIVILEGE
const SERIES_READER = "urn:li:corpuser:series-reader"; // GET_TIMESERIES_ASPECT
const TESTER = "urn:li:corpuser:tester"; // MANAGE_TESTS: may cancel evaluations only
const OPERATOR = "urn:li:corpuser:operator"; // MANAGE_SYSTEM_OPERATIONS: truncations, and sees every task

const proposal = (aspectName: string, value: unknown, entityUrn = DATASET) => ({
  entityType: "dataset",
  entityUrn,
  aspectName,
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
});
const RESULTS = `query($urn: String!) { testResults(urn: $urn) { passing { type test { urn } } } }`;

describe("authorization of metadata and tasks", () => {
  let h: Harness;
  const as = (urn: string) => systemClientHeaders(urn);
  const getEntity = async (urn: string, headers: Record<string, string>) => {
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, { headers });
    return { status: res.status, body: (await res.json()) as HttpBody };
  };
  const seriesOf = (urn: string, headers: Record<string, string>) =>
    h.post(
      "/gms/aspects?action=getTimeseriesAspectValues",
      { urn, entity: "dataset", aspect: "datasetProfile" },
      headers,
    );

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, INGESTER, ["INGEST_METADATA", "VIEW_TESTS"]);
    await grant(h, READER, ["GET_ENTITY_PRIVILEGE"]);
    await grant(h, SERIES_READER, ["GET_TIMESERIES_ASPECT"]);
    await grant(h, TESTER, ["MANAGE_TESTS"]);
    await grant(h, OPERATOR, ["MANAGE_SYSTEM_OPERATIONS"]);
    const ingested = await h.post("/gms/aspects?action=ingestProposalBatch", {
      proposals: [
        proposal("datasetProperties", { description: "payroll" }),
        proposal("datasetProfile", { timestampMillis: Date.UTC(2026, 0, 1), rowCount: 7 }),
      ],
    });
    expect(ingested.status).toBe(200);
  });
  afterAll(() => h.close());

  describe("reading metadata", () => {
    it.each([
      ["holding no privilege", NOBODY],
      ["holding only INGEST_METADATA and VIEW_TESTS", INGESTER],
      ["holding only GET_TIMESERIES_ASPECT", SERIES_READER],
    ])("GET /gms/entities refuses a caller %s, alike for a stored and an unknown entity", async (_who, caller) => {
      const refusal = {
        status: 403,
        body: { status: 403, code: "FORBIDDEN", message: `${caller} is unauthorized to get entities.` },
      };
      expect(await getEntity(DATASET, as(caller))).toEqual(refusal);
      expect(await getEntity(UNKNOWN_DATASET, as(caller))).toEqual(refusal);
    });

    it("GET /gms/entities answers a GET_ENTITY holder (granted by DataHub's name) and the root user", async () => {
      for (const headers of [as(READER), as(ROOT), bearer((await createToken(h, READER)).token)]) {
        const res = await getEntity(DATASET, headers);
        expect(res).toMatchObject({
          status: 200,
          body: { value: { aspects: { datasetProperties: { description: "payroll" } } } },
        });
        expect((await getEntity(UNKNOWN_DATASET, headers)).status).toBe(404);
      }
    });

    it.each([
      ["holding no privilege", NOBODY],
      ["holding only INGEST_METADATA and VIEW_TESTS", INGESTER],
      ["holding only GET_ENTITY", READER],
    ])(
      "getTimeseriesAspectValues refuses a caller %s, alike for a stored and an unknown entity",
      async (_who, caller) => {
        const message = `${caller} is unauthorized to get time-series aspect values.`;
        expect(await seriesOf(DATASET, as(caller))).toEqual({
          status: 403,
          body: { status: 403, code: "FORBIDDEN", message },
        });
        expect(await seriesOf(UNKNOWN_DATASET, as(caller))).toEqual({
          status: 403,
          body: { status: 403, code: "FORBIDDEN", message },
        });
      },
    );

    it("getTimeseriesAspectValues answers a GET_TIMESERIES_ASPECT holder and the root user", async () => {
      for (const caller of [SERIES_READER, ROOT]) {
        const res = await seriesOf(DATASET, as(caller));
        expect(res.status).toBe(200);
        expect((res.body.value as { values: unknown[] }).values).toHaveLength(1);
      }
    });

    it("stores a policy granting DataHub's spelling under this service's name", async () => {
      const policies = await h.prisma.policy.findMany({ where: { users: { has: READER } } });
      expect(policies.map((p) => p.privileges)).toEqual([["GET_ENTITY"]]);
    });
  });

  describe("aspects only the service writes", () => {
    const forged = { passing: [{ test: "urn:li:test:never-ran", type: "SUCCESS" }], failing: [] };

    it("refuses ingestProposal of testResults, even to the root user, naming the aspect", async () => {
      for (const caller of [INGESTER, ROOT]) {
        const res = await h.post(
          "/gms/aspects?action=ingestProposal",
          { proposal: proposal("testResults", forged) },
          as(caller),
        );
        expect(res).toEqual({
          status: 403,
          body: {
            status: 403,
            code: "FORBIDDEN",
            message:
              `${caller} is unauthorized to ingest aspect testResults (proposal.aspectName): only the service writes ` +
              "it, through metadata-test evaluation (evaluate with push: true, or runTest)",
          },
        });
      }
    });

    it("refuses a whole batch holding one, naming the proposal's index, and stores none of it", async () => {
      const other = "urn:li:dataset:(urn:li:dataPlatform:hive,db.batch,PROD)";
      const res = await h.post(
        "/gms/aspects?action=ingestProposalBatch",
        {
          proposals: [
            proposal("datasetProperties", { description: "fine" }, other),
            proposal("testResults", forged, other),
          ],
        },
        as(INGESTER),
      );
      expect(res.status).toBe(403);
      expect(res.body.message).toContain("ingest aspect testResults (proposals[1].aspectName)");
      expect(await h.prisma.aspect.count({ where: { urn: other } })).toBe(0);
    });

    it("leaves GraphQL testResults with nothing forged to report", async () => {
      await h.graphql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        {
          i: {
            id: "never-ran",
            name: "never ran",
            category: "c",
            definition: {
              json: JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } }),
            },
          },
        },
        as(ROOT),
      );
      await h.post("/gms/aspects?action=ingestProposal", { proposal: proposal("testResults", forged) }, as(INGESTER));
      const res = await h.graphql(RESULTS, { urn: DATASET }, as(INGESTER));
      expect(res.body).toEqual({ data: { testResults: null } });
    });
  });

  describe("tasks: the same refusal whether the task exists or not", () => {
    const truncation = randomUUID();
    const evaluation = randomUUID();
    const unknown = randomUUID();
    const cancel = (taskId: string, caller: string) =>
      h.post("/gms/operations?action=cancelTask", { taskId }, as(caller));

    beforeAll(async () => {
      for (const [id, type] of [
        [truncation, "TRUNCATE_TIMESERIES"],
        [evaluation, "EVALUATE_TESTS"],
      ] as const) {
        await h.prisma.task.create({
          data: { id, type, state: "completed", request: {}, createdBy: ROOT, finishedAt: new Date() },
        });
      }
    });

    it.each([
      ["holding no privilege", NOBODY, [truncation, evaluation, unknown]],
      ["holding MANAGE_TESTS (evaluations only), asking of truncations", TESTER, [truncation, unknown]],
      ["holding MANAGE_SYSTEM_OPERATIONS, asking of evaluations", OPERATOR, [evaluation]],
    ])("cancelTask refuses a caller %s alike", async (_who, caller, taskIds) => {
      for (const taskId of taskIds) {
        expect(await cancel(taskId, caller)).toEqual({
          status: 403,
          body: { status: 403, code: "FORBIDDEN", message: `${caller} is unauthorized to cancel this task.` },
        });
      }
    });

    it("cancelTask tells a caller who may see every task which do not exist, and acts on the ones it may cancel", async () => {
      expect((await cancel(unknown, OPERATOR)).status).toBe(404);
      expect((await cancel(unknown, ROOT)).status).toBe(404);
      expect((await cancel(truncation, OPERATOR)).body.code).toBe("CONFLICT"); // completed already
      expect((await cancel(evaluation, TESTER)).body.code).toBe("CONFLICT");
    });

    it("getTaskStatus (both routes) refuses a caller without GET_TASK_STATUS alike, and answers one with it", async () => {
      for (const taskId of [truncation, unknown]) {
        const refusal = { status: 403, code: "FORBIDDEN", message: `${TESTER} is unauthorized to get task status.` };
        const posted = await h.post("/gms/operations?action=getTaskStatus", { taskId }, as(TESTER));
        expect(posted).toEqual({ status: 403, body: refusal });
        const got = await fetch(`${h.baseUrl}/gms/operations/tasks/${taskId}`, { headers: as(TESTER) });
        expect({ status: got.status, body: await got.json() }).toEqual({ status: 403, body: refusal });
      }
      expect((await h.post("/gms/operations?action=getTaskStatus", { taskId: truncation }, as(OPERATOR))).status).toBe(
        200,
      );
      expect((await h.post("/gms/operations?action=getTaskStatus", { taskId: unknown }, as(OPERATOR))).status).toBe(
        404,
      );
    });
  });

  describe("X-Platform-Actor beside a bearer token", () => {
    it.each(["alice", "urn:li:corpGroup:admins", "urn:li:corpuser:"])(
      "is a 400 naming the header when malformed ('%s')",
      async (header) => {
        const { token } = await createToken(h, READER);
        const res = await getEntity(DATASET, { ...bearer(token), "x-platform-actor": header });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: "BAD_USER_INPUT",
          message: expect.stringContaining("x-platform-actor"),
        });
      },
    );

    it("is a 403 when it names another user, and accepted when it names the token's", async () => {
      const { token } = await createToken(h, READER);
      expect((await getEntity(DATASET, { ...bearer(token), "x-platform-actor": ROOT })).status).toBe(403);
      expect((await getEntity(DATASET, { ...bearer(token), "x-platform-actor": READER })).status).toBe(200);
    });
  });
});
