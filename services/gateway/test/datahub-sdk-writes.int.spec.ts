/**
 * DataHub's Python SDK writing (rest_emitter.py: Rest.li and OpenAPI modes), each request as DataHub's code builds it
 * (fixtures/datahub/, each naming the DataHub file and commit it comes from), against the real gateway.
 */
import { bearer, createToken, grant, startGateway, type Harness } from "./support/gateway-harness";
import { SDK_SESSION_HEADERS, sdkBearer } from "./fixtures/datahub/requests";
import {
  EMITTER_DASHBOARD_URN,
  EMITTER_DATASET_PROFILE,
  EMITTER_DATASET_URN,
  EMITTER_INGEST_PROPOSAL_BATCH_PATH,
  EMITTER_INGEST_PROPOSAL_PATH,
  emitterDashboardStatusMcp,
  emitterDatasetProfileMcp,
  emitterIngestProposal,
  emitterIngestProposalBatch,
  emitterOpenApiPath,
  emitterOpenApiPayload,
  emitterSystemMetadata,
} from "./fixtures/datahub/requests-sdk-writes";
import { ALICE, BOB, Answer } from "./support/datahub-sign-in-and-writes";

describe("DataHub's clients, round three: the SDK writes, the web app signs in", () => {
  let h: Harness;
  let alice: string;

  /** As DataHub's Python SDK posts: its session headers and the JSON body, to a path under `base`. */
  const sdk = async (base: string, p: string, body: unknown, auth = sdkBearer(alice)): Promise<Answer> => {
    const res = await fetch(`${h.baseUrl}${base}${p}`, {
      method: "POST",
      headers: { ...SDK_SESSION_HEADERS, ...auth },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Answer["body"] };
  };

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, ALICE, [
      "INGEST_METADATA",
      "GET_ENTITY",
      "GET_TIMESERIES_ASPECT",
      "GENERATE_PERSONAL_ACCESS_TOKENS",
    ]);
    alice = (await createToken(h, ALICE)).token;
  });
  afterAll(() => h.close());

  describe("the SDK's Rest.li emitter (rest_emitter.py)", () => {
    it.each([
      ["/gms", false],
      ["/api/gms", true],
      ["", false],
    ])(
      "ingests {proposal, async} at %s/aspects (async %s), keeping systemMetadata with the row",
      async (base, async) => {
        const lastObserved = Date.now();
        const res = await sdk(
          base,
          EMITTER_INGEST_PROPOSAL_PATH,
          emitterIngestProposal(emitterDatasetProfileMcp(lastObserved), async),
        );
        expect(res).toEqual({ status: 200, body: { value: EMITTER_DATASET_URN } });
        const read = await sdk("/gms", "/aspects?action=getTimeseriesAspectValues", {
          urn: EMITTER_DATASET_URN,
          entity: "dataset",
          aspect: "datasetProfile",
          limit: 10,
        });
        const values = (read.body.value as { values: Array<Record<string, unknown>> }).values;
        expect(
          values.find((v) => (v.systemMetadata as { lastObserved: number }).lastObserved === lastObserved),
        ).toEqual({
          timestampMillis: EMITTER_DATASET_PROFILE.timestampMillis,
          aspect: { contentType: "application/json", value: expect.any(String) },
          systemMetadata: emitterSystemMetadata(lastObserved),
        });
      },
    );

    it("ingests {proposals, async} at /aspects and /gms/aspects, each version keeping its systemMetadata", async () => {
      for (const base of ["", "/gms"]) {
        const lastObserved = Date.now();
        const res = await sdk(
          base,
          EMITTER_INGEST_PROPOSAL_BATCH_PATH,
          emitterIngestProposalBatch(
            [emitterDashboardStatusMcp(lastObserved), emitterDatasetProfileMcp(lastObserved)],
            true,
          ),
        );
        expect(res).toEqual({ status: 200, body: { value: [EMITTER_DASHBOARD_URN, EMITTER_DATASET_URN] } });
        const entity = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(EMITTER_DASHBOARD_URN)}`, {
          headers: bearer(alice),
        });
        const { value } = (await entity.json()) as {
          value: { aspects: Record<string, unknown>; stamps: Record<string, Record<string, unknown>> };
        };
        expect(value.aspects.status).toEqual({ removed: false });
        expect(value.stamps.status).toMatchObject({
          created: { actor: ALICE },
          systemMetadata: emitterSystemMetadata(lastObserved),
        });
      }
    });

    it("accepts every other field of DataHub's MetadataChangeProposal, and refuses a field outside it, naming it", async () => {
      const mcp = {
        auditHeader: { time: 1, messageId: "m" },
        ...emitterDashboardStatusMcp(Date.now()),
        entityKeyAspect: {
          value: '{"dashboardTool": "looker", "dashboardId": "dashboards.0"}',
          contentType: "application/json",
        },
        headers: { "X-DataHub-Sync-Index-Update": "true" },
      };
      expect((await sdk("/gms", EMITTER_INGEST_PROPOSAL_PATH, emitterIngestProposal(mcp, false))).status).toBe(200);

      const outside = await sdk("/gms", EMITTER_INGEST_PROPOSAL_PATH, {
        ...emitterIngestProposal(mcp, false),
        trace: true,
      });
      expect(outside.status).toBe(400);
      expect(outside.body.message).toContain("unknown field(s) trace");
      const inside = await sdk(
        "/gms",
        EMITTER_INGEST_PROPOSAL_PATH,
        emitterIngestProposal({ ...mcp, extra: 1 }, false),
      );
      expect(inside.body.message).toContain("proposal: unknown field(s) extra");
      const flag = await sdk("/gms", EMITTER_INGEST_PROPOSAL_PATH, { proposal: mcp, async: "maybe" });
      expect(flag.status).toBe(400);
      expect(flag.body.message).toContain("async");
    });

    it("refuses a conditional write and an oversized systemMetadata with a 400 naming the field and the limit", async () => {
      const mcp = emitterDashboardStatusMcp(Date.now());
      const conditional = await sdk(
        "/gms",
        EMITTER_INGEST_PROPOSAL_PATH,
        emitterIngestProposal({ ...mcp, headers: { "If-Version-Match": "3" } }, false),
      );
      expect(conditional.status).toBe(400);
      expect(conditional.body.message).toContain("proposal.headers.If-Version-Match");
      const big = await sdk(
        "/gms",
        EMITTER_INGEST_PROPOSAL_PATH,
        emitterIngestProposal({ ...mcp, systemMetadata: { properties: { note: "x".repeat(9000) } } }, false),
      );
      expect(big.status).toBe(400);
      expect(big.body.message).toMatch(/proposal\.systemMetadata: must be at most 8192 bytes/);
    });

    it("answers a refusal with the JSON `message` the emitter raises OperationalError with", async () => {
      const res = await sdk(
        "/gms",
        EMITTER_INGEST_PROPOSAL_PATH,
        emitterIngestProposal({ ...emitterDashboardStatusMcp(1), aspectName: "nope" }, false),
      );
      expect(res.status).toBe(400);
      expect(res.body.message).toContain("Unknown aspect 'nope'");
    });
  });

  describe("the SDK's OpenAPI mode (openapi_ingestion: request_helper.py)", () => {
    it.each(["/gms", ""])(
      "writes test_rest_emitter's payload at %s/openapi/v3/entity/dataset and answers it",
      async (base) => {
        const lastObserved = Date.now();
        const payload = emitterOpenApiPayload(lastObserved);
        const res = await sdk(base, emitterOpenApiPath("dataset", false), payload);
        expect(res.status).toBe(200);
        expect(res.body).toEqual([{ urn: EMITTER_DATASET_URN, datasetProfile: { value: EMITTER_DATASET_PROFILE } }]);
        const read = await sdk("/gms", "/aspects?action=getTimeseriesAspectValues", {
          urn: EMITTER_DATASET_URN,
          entity: "dataset",
          aspect: "datasetProfile",
          limit: 100,
        });
        const values = (read.body.value as { values: Array<{ systemMetadata?: { lastObserved: number } }> }).values;
        expect(values.some((v) => v.systemMetadata?.lastObserved === lastObserved)).toBe(true);
        // DataHub's systemMetadata flag repeats it in the answer
        const echoed = await sdk(
          base,
          `${emitterOpenApiPath("dataset", true)}&systemMetadata=true`,
          emitterOpenApiPayload(lastObserved),
        );
        expect(echoed.body).toEqual([
          {
            urn: EMITTER_DATASET_URN,
            datasetProfile: {
              value: EMITTER_DATASET_PROFILE,
              systemMetadata: payload[0]!.datasetProfile.systemMetadata,
            },
          },
        ]);
      },
    );

    it("refuses what it cannot honour, naming the field: an unknown aspect or type, a create-only write, another method", async () => {
      const [item] = emitterOpenApiPayload(Date.now());
      const unknown = await sdk("/gms", emitterOpenApiPath("dataset", false), [{ ...item, nope: { value: {} } }]);
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toContain("Unknown aspect 'nope'");
      const type = await sdk("/gms", emitterOpenApiPath("nothing", false), [item]);
      expect(type.status).toBe(400);
      expect(type.body.message).toContain("params.entityName");
      const create = await sdk("/gms", `${emitterOpenApiPath("dataset", false)}&createIfNotExists=true`, [item]);
      expect(create.status).toBe(400);
      expect(create.body.message).toContain("query.createIfNotExists");
      const empty = await sdk("/gms", emitterOpenApiPath("dataset", false), [{ urn: EMITTER_DATASET_URN }]);
      expect(empty.body.message).toContain("body.0: names no aspect");
      const patch = await fetch(`${h.baseUrl}/gms${emitterOpenApiPath("dataset", false)}`, {
        method: "PATCH",
        headers: { ...SDK_SESSION_HEADERS, ...sdkBearer(alice) },
        body: "[]",
      });
      expect(patch.status).toBe(405);
      expect(patch.headers.get("allow")).toBe("POST");
    });

    it("needs INGEST_METADATA, as ingestProposal does", async () => {
      const bob = (await createToken(h, BOB)).token;
      const res = await sdk("/gms", emitterOpenApiPath("dataset", false), emitterOpenApiPayload(1), sdkBearer(bob));
      expect(res.status).toBe(403);
    });
  });
});
