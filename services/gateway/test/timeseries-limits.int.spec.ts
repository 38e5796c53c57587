/**
 * Time-series limits over real HTTP (docs/limits.md "Time-series writes and reads"): a batch on too many days, a
 * timestamp outside the accepted range, an aspect at its partition budget and a read limit past the maximum are each
 * a 4xx naming the limit, with nothing written; PostgreSQL's lock table running full is a 503, not a 500.
 */
import { createLogger } from "@mdp/core";
import { formatError } from "../src/graphql/errors";
import { toAppError } from "../src/http/error-handler";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const DAY = 86_400_000;
const T0 = Date.UTC(2024, 0, 1);
const urn = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,t${i},PROD)`;
const profile = (timestampMillis: number, i = 0) => ({
  entityType: "dataset",
  entityUrn: urn(i),
  aspectName: "datasetProfile",
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify({ timestampMillis, rowCount: i }) },
});

describe("time-series limits over HTTP", () => {
  let h: Harness;
  const batch = (proposals: unknown[]) =>
    h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, systemClientHeaders(ROOT));
  const stored = async () => {
    const { rows } = await h.database.pool.query<{ partitions: string; rows: string }>(
      "SELECT count(*) AS partitions, coalesce(sum(row_count), 0) AS rows FROM timeseries.partition",
    );
    return { partitions: Number(rows[0]!.partitions), rows: Number(rows[0]!.rows) };
  };

  beforeAll(async () => {
    h = await startGateway({ TIMESERIES_MAX_DAYS_PER_WRITE: "20", TIMESERIES_MAX_PARTITIONS_PER_ASPECT: "30" });
  });
  afterAll(() => h.close());

  it("refuses a batch on more days than the cap whole, naming the cap, with nothing written", async () => {
    const res = await batch(Array.from({ length: 21 }, (_, d) => profile(Date.UTC(1990, 0, 1) + d * 365 * DAY, d)));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining(
        "on 21 distinct days (counted per aspect); one write may touch at most 20 (TIMESERIES_MAX_DAYS_PER_WRITE)",
      ),
    });
    expect(await stored()).toEqual({ partitions: 0, rows: 0 });
    // Days of two aspects add up: 15 + 6 is over 20 too.
    const usage = (t: number) => ({ ...profile(t), aspectName: "datasetUsageStatistics" });
    const mixed = await batch([
      ...Array.from({ length: 15 }, (_, d) => profile(T0 + d * DAY)),
      ...Array.from({ length: 6 }, (_, d) => usage(T0 + d * DAY)),
    ]);
    expect(mixed.status).toBe(400);
    expect(await stored()).toEqual({ partitions: 0, rows: 0 });
  });

  it("refuses a timestamp after now plus the allowed skew, naming the proposal's field", async () => {
    const future = Date.now() + 2 * DAY;
    const res = await batch([profile(T0), profile(future)]);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(
      new RegExp(
        `^proposals\\[1\\]\\.aspect\\.value\\.timestampMillis ${future} is in the future: it may be at most 86400000 ms after now`,
      ),
    );
    expect(await stored()).toEqual({ partitions: 0, rows: 0 });
  });

  it("keeps an aspect within its partition budget with a 409 naming it; existing days stay writable", async () => {
    const first = await batch(Array.from({ length: 20 }, (_, d) => profile(T0 + d * DAY, d)));
    expect(first.status).toBe(200);
    const over = await batch(Array.from({ length: 11 }, (_, d) => profile(T0 + (100 + d) * DAY, d)));
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({
      code: "CONFLICT",
      message: expect.stringContaining(
        "dataset/datasetProfile holds 20 day partitions and this write needs 11 more; one aspect may hold at most 30 (TIMESERIES_MAX_PARTITIONS_PER_ASPECT)",
      ),
    });
    expect(await stored()).toEqual({ partitions: 20, rows: 20 });
    expect((await batch(Array.from({ length: 20 }, (_, d) => profile(T0 + d * DAY + 1, d)))).status).toBe(200);
    expect(await stored()).toEqual({ partitions: 20, rows: 40 });
  });

  it("bounds a read's limit with a 400 naming it, and reads newest first without a range", async () => {
    const read = (body: Record<string, unknown>) =>
      h.post(
        "/gms/aspects?action=getTimeseriesAspectValues",
        { urn: urn(3), entity: "dataset", aspect: "datasetProfile", ...body },
        systemClientHeaders(ROOT),
      );
    const tooMany = await read({ limit: 10_001 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toContain("limit: must be at most 10000");
    const res = await read({ limit: 5 });
    expect(res.status).toBe(200);
    const values = (res.body.value as { values: Array<{ timestampMillis: number }> }).values;
    expect(values.map((v) => v.timestampMillis)).toEqual([T0 + 3 * DAY + 1, T0 + 3 * DAY]);
  });

  it("answers PostgreSQL's 'out of shared memory' (its lock table full) as a 503 to retry, not a 500", () => {
    const error = Object.assign(new Error("out of shared memory"), { code: "53200" });
    const answer = toAppError(error);
    expect(answer.status).toBe(503);
    expect(answer.message).not.toContain("shared memory");
    expect(answer.details).toEqual({ retryAfterSeconds: 2 });
    const graphql = formatError(createLogger("test", "silent"))(
      { message: "out of shared memory", extensions: { code: "INTERNAL_SERVER_ERROR" } },
      error,
    );
    expect(graphql.extensions?.code).toBe("SERVICE_UNAVAILABLE");
    expect(graphql.message).toBe(answer.message);
  });
});
