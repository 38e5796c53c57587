/**
 * Ingestion and reads over real HTTP and PostgreSQL: DataHub's MetadataChangeProposal shape, versioned and time-series
 * aspects, every refusal naming its problem with nothing stored, and getIndexSizes.
 */
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { DATASET, INGESTER, proposal, profile } from "./support/metadata-proposals";

describe("metadata ingestion and reads", () => {
  let h: Harness;
  const post = async (path: string, body: unknown, headers = systemClientHeaders(INGESTER)) => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { value?: unknown; message?: string; code?: string } };
  };
  const storedRows = async () => {
    const [aspects] = await h.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM aspect`;
    const [series] = await h.prisma.$queryRaw<
      Array<{ n: bigint }>
    >`SELECT coalesce(sum(row_count), 0)::bigint AS n FROM timeseries.partition`;
    return { aspects: Number(aspects!.n), timeseries: Number(series!.n) };
  };

  beforeAll(async () => {
    h = await startGateway();
    // Writing does not let one read: getTimeseriesAspectValues below needs its own privilege.
    await grant(h, INGESTER, ["INGEST_METADATA", "GET_TIMESERIES_ASPECT"]);
  });
  afterAll(() => h.close());

  it("upserts a versioned aspect, keeps earlier versions and serves the latest", async () => {
    expect(await post("/gms/aspects?action=ingestProposal", { proposal: proposal() })).toEqual({
      status: 200,
      body: { value: DATASET },
    });
    await post("/api/gms/aspects?action=ingestProposal", { proposal: proposal({}, { description: "orders v2" }) });
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(DATASET)}`, {
      headers: systemClientHeaders(ROOT),
    });
    const created = (await h.prisma.aspect.findFirstOrThrow({ where: { urn: DATASET, version: 2 } })).createdAt;
    expect(await res.json()).toEqual({
      value: {
        urn: DATASET,
        entityType: "dataset",
        aspects: { datasetProperties: { description: "orders v2" } },
        // written by the system client for INGESTER: no access token to name
        stamps: { datasetProperties: { version: 2, created: { time: created.getTime(), actor: INGESTER } } },
      },
    });
    const versions = await h.prisma.aspect.findMany({
      where: { urn: DATASET, aspectName: "datasetProperties" },
      orderBy: { version: "asc" },
    });
    expect(versions.map((v) => [v.version, v.value])).toEqual([
      [1, { description: "orders" }],
      [2, { description: "orders v2" }],
    ]);
  });

  it("stamps each version with its writer and the access token it came through, read back with the entity", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.stamped,PROD)";
    const { token, id } = await createToken(h, INGESTER);
    const ingested = await post(
      "/gms/aspects?action=ingestProposalBatch",
      {
        proposals: [
          proposal({ entityUrn: urn }),
          proposal({ entityUrn: urn, aspectName: "status" }, { removed: false }),
        ],
      },
      bearer(token),
    );
    expect(ingested.status).toBe(200);
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, {
      headers: systemClientHeaders(ROOT),
    });
    const { stamps } = ((await res.json()) as { value: { stamps: Record<string, unknown> } }).value;
    const stamp = { version: 1, created: { time: expect.any(Number), actor: INGESTER }, createdVia: id };
    expect(stamps).toEqual({ datasetProperties: stamp, status: stamp });
    const rows = await h.prisma.aspect.findMany({ where: { urn } });
    expect(rows.map((r) => [r.createdBy, r.createdVia])).toEqual([
      [INGESTER, id],
      [INGESTER, id],
    ]);
  });

  it("answers 404 for an entity with nothing stored, 400 for a malformed urn", async () => {
    const missing = await fetch(
      `${h.baseUrl}/gms/entities/${encodeURIComponent("urn:li:dataset:(urn:li:dataPlatform:hive,none,PROD)")}`,
      { headers: systemClientHeaders(ROOT) },
    );
    expect(missing.status).toBe(404);
    const bad = await fetch(`${h.baseUrl}/gms/entities/not-a-urn`, { headers: systemClientHeaders(ROOT) });
    expect(bad.status).toBe(400);
  });

  it("appends time-series rows in a batch and returns them newest first", async () => {
    const t0 = Date.UTC(2026, 0, 1);
    const res = await post("/gms/aspects?action=ingestProposalBatch", {
      proposals: [
        profile(t0),
        profile(t0 + 86_400_000),
        profile(t0 + 2 * 86_400_000),
        proposal({ entityUrn: DATASET }),
      ],
    });
    expect(res.status).toBe(200);
    const values = await post("/gms/aspects?action=getTimeseriesAspectValues", {
      urn: DATASET,
      entity: "dataset",
      aspect: "datasetProfile",
      startTimeMillis: t0,
      limit: 2,
    });
    const body = values.body.value as { values: Array<{ timestampMillis: number; aspect: { value: string } }> };
    expect(body.values.map((v) => v.timestampMillis)).toEqual([t0 + 2 * 86_400_000, t0 + 86_400_000]);
    expect(JSON.parse(body.values[0]!.aspect.value)).toEqual({
      timestampMillis: t0 + 2 * 86_400_000,
      rowCount: (t0 + 2 * 86_400_000) % 1000,
    });
  });

  it.each([
    [
      "an unknown entity type",
      proposal({ entityType: "datasett" }),
      "Unknown entity type 'datasett' in 'proposals[1].entityType'; valid entity types: dataset, chart",
    ],
    [
      "an unknown aspect (names are case-sensitive)",
      proposal({ aspectName: "DatasetProperties" }),
      "Unknown aspect 'DatasetProperties' in 'proposals[1].aspectName' for entity type dataset; valid aspects: datasetKey",
    ],
    [
      "a urn of another type",
      proposal({ entityUrn: "urn:li:chart:(looker,c1)" }),
      "proposals[1].entityUrn 'urn:li:chart:(looker,c1)' is a chart urn, but proposals[1].entityType is 'dataset'",
    ],
    ["a malformed urn", proposal({ entityUrn: "dataset:x" }), "Invalid urn in 'proposals[1].entityUrn'"],
    [
      "a value that is not JSON",
      proposal({ aspect: { contentType: "application/json", value: "{nope" } }),
      "proposals[1].aspect.value is not valid JSON",
    ],
    [
      "a time series without timestampMillis",
      proposal({ aspectName: "datasetProfile" }, { rowCount: 3 }),
      "proposals[1].aspect.value of time-series aspect datasetProfile must carry timestampMillis",
    ],
    [
      "a time series after year 9999, whose day partition could not be named",
      profile(Date.UTC(10000, 0, 2)),
      "proposals[1].aspect.value.timestampMillis 253402387200000 is after the last supported instant, 9999-12-31T23:59:59.999Z",
    ],
    [
      "an unsupported changeType",
      proposal({ changeType: "PATCH" }),
      "proposals[1].changeType 'PATCH' is not supported; only UPSERT is",
    ],
    ["an unknown field", proposal({ color: "blue" }), "proposals.1: unknown field(s) color"],
    [
      "a number PostgreSQL cannot store, which JSON allows",
      proposal({
        aspect: { contentType: "application/json", value: '{"description":"2e-99999 \\" 3e-99999","score":1e-99999}' },
      }),
      "proposals[1].aspect.value holds the number 1e-99999, which PostgreSQL cannot store (at most 131072 digits before the decimal point and 16383 after it)",
    ],
    [
      "a value nested deeper than 1000 levels",
      proposal({ aspect: { contentType: "application/json", value: `{"a":${"[".repeat(3000)}${"]".repeat(3000)}}` } }),
      "contains more than 1000 levels of nesting, which cannot be stored",
    ],
  ])("refuses %s with a 400 naming it, and stores nothing of the batch", async (_case, bad, message) => {
    const before = await storedRows();
    const res = await post("/gms/aspects?action=ingestProposalBatch", {
      proposals: [profile(Date.UTC(2026, 1, 1)), bad],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, code: "BAD_USER_INPUT" });
    expect(res.body.message).toContain(message);
    expect(await storedRows()).toEqual(before);
  });

  it("refuses a request body nested deeper than 1000 levels with a 400, however deep", async () => {
    const res = await fetch(`${h.baseUrl}/gms/aspects?action=ingestProposalBatch`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(INGESTER) },
      body: `{"proposals":${"[".repeat(200_000)}${"]".repeat(200_000)}}`,
    });
    expect(res.status).toBe(400);
    // Counted before the body is parsed (docs/limits.md, "JSON nesting of a request body").
    expect(((await res.json()) as { message: string }).message).toBe(
      "Request body nests arrays and objects deeper than the limit of 1000 levels.",
    );
  });

  it("refuses ingestion without INGEST_METADATA", async () => {
    const res = await post(
      "/gms/aspects?action=ingestProposal",
      { proposal: proposal() },
      systemClientHeaders("urn:li:corpuser:reader"),
    );
    expect(res).toMatchObject({
      status: 403,
      body: { message: "urn:li:corpuser:reader is unauthorized to ingest metadata." },
    });
  });

  it("answers an action asked for with another method than POST with 405, saying to use POST", async () => {
    for (const method of ["GET", "PUT"]) {
      const res = await fetch(`${h.baseUrl}/api/gms/aspects?action=ingestProposal`, {
        method,
        headers: systemClientHeaders(INGESTER),
      });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({
        status: 405,
        code: "METHOD_NOT_ALLOWED",
        message:
          "/api/gms/aspects takes POST ?action=<name> with a JSON body; valid actions: ingestProposal, ingestProposalBatch, getTimeseriesAspectValues",
      });
    }
  });

  it("refuses an unknown action and a body that is not JSON", async () => {
    const unknown = await post("/gms/aspects?action=ingest", {});
    expect(unknown.body.message).toBe(
      "Unknown action 'ingest' for /aspects; valid actions: ingestProposal, ingestProposalBatch, getTimeseriesAspectValues",
    );
    const res = await fetch(`${h.baseUrl}/gms/aspects?action=ingestProposal`, {
      method: "POST",
      headers: { "content-type": "text/plain", ...systemClientHeaders(INGESTER) },
      body: "hello",
    });
    expect(res.status).toBe(415);
  });

  it("keeps two concurrent upserts of one aspect as two versions", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.race,PROD)";
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post("/gms/aspects?action=ingestProposal", {
          proposal: proposal({ entityUrn: urn }, { description: `v${i}` }),
        }),
      ),
    );
    const versions = await h.prisma.aspect.findMany({ where: { urn }, select: { version: true } });
    expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("reports index sizes with exact row counts and time ranges, for aspects with data only", async () => {
    const chart = "urn:li:chart:(looker,sales)";
    const t = Date.UTC(2026, 2, 3, 12);
    await post("/gms/aspects?action=ingestProposal", {
      proposal: proposal(
        { entityType: "chart", entityUrn: chart, aspectName: "chartUsageStatistics" },
        { timestampMillis: t, viewsCount: 4 },
      ),
    });
    const res = await post("/gms/operations?action=getIndexSizes", {}, systemClientHeaders(ROOT));
    const sizes = (res.body.value as { indexSizes: Array<Record<string, unknown>> }).indexSizes;
    expect(sizes.map((s) => s.indexName)).toEqual([
      "chart_chartusagestatisticsaspect_v1",
      "dataset_datasetprofileaspect_v1",
    ]);
    expect(sizes[0]).toEqual({
      indexName: "chart_chartusagestatisticsaspect_v1",
      entityName: "chart",
      aspectName: "chartUsageStatistics",
      rowCount: 1,
      sizeInMb: expect.any(Number),
      sizeMb: expect.any(Number), // DataHub's answers carry it too (deprecated)
      oldestTimestampMillis: t,
      newestTimestampMillis: t,
    });
    expect(sizes[1]).toMatchObject({
      rowCount: 3,
      oldestTimestampMillis: Date.UTC(2026, 0, 1),
      newestTimestampMillis: Date.UTC(2026, 0, 3),
    });
  });

  it("ingests concurrent time-series rows for more new days than the pool has connections", async () => {
    // Each request's day partition is new: made in a short transaction of its own, which must not need a second
    // connection while the request's own transaction holds the first (a pool of 5 here, 10 in a gateway).
    const day0 = Date.UTC(2026, 9, 1, 12); // after every other day of this file, and in the past
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`${h.baseUrl}/gms/aspects?action=ingestProposal`, {
          method: "POST",
          headers: { "content-type": "application/json", ...systemClientHeaders(INGESTER) },
          body: JSON.stringify({
            proposal: profile(day0 + i * 86_400_000, `urn:li:dataset:(urn:li:dataPlatform:hive,d${i},PROD)`),
          }),
          signal: AbortSignal.timeout(10_000),
        }).then((res) => res.status),
      ),
    );
    expect(statuses).toEqual(Array(12).fill(200));
    const { rows } = await h.database.pool.query<{ n: string }>(
      "SELECT sum(row_count) AS n FROM timeseries.partition WHERE from_millis >= $1",
      [day0 - 43_200_000],
    );
    expect(Number(rows[0]!.n)).toBe(12);
  });

  it("reads an entity with time-series rows only as unknown, as evaluation does: as in DataHub, they make no entity", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,profiled_only,PROD)";
    const ingested = await post("/gms/aspects?action=ingestProposal", { proposal: profile(Date.UTC(2026, 0, 5), urn) });
    expect(ingested.status).toBe(200);
    const res = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(urn)}`, {
      headers: systemClientHeaders(ROOT),
    });
    expect(res.status).toBe(404);
  });
});
