/**
 * Two truncations of one aspect that overlap (real PostgreSQL): one plans from the partitions it listed, the other
 * then drops some of them whole. The first one's plan and batch delete go on without the dropped tables — never
 * PostgreSQL's "relation … does not exist" as the task's end — and leave exactly the rows at or after each cutoff.
 */
import pg from "pg";
import {
  DAY_MILLIS,
  deleteBatch,
  dropPartitions,
  inTransaction,
  planTruncation,
  TimeseriesStore,
  type TimeseriesRow,
} from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

const PROFILE = { entityType: "dataset", aspectName: "datasetProfile" };
const URN = "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)";
const T0 = Date.UTC(2020, 0, 1);
const row = (t: number): TimeseriesRow => ({ urn: URN, timestampMillis: t, valueJson: `{"t":${t}}` });

describe("overlapping truncations", () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase("ts_overlap");
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("plans and deletes from a partition list made before another truncation dropped part of it", async () => {
    const store = new TimeseriesStore(pool);
    // Six days, two rows a day: at midnight and at noon.
    const rows = Array.from({ length: 6 }, (_, d) => [
      row(T0 + d * DAY_MILLIS),
      row(T0 + d * DAY_MILLIS + DAY_MILLIS / 2),
    ]).flat();
    await store.prepare([{ ...PROFILE, rows }]);
    await inTransaction(pool, (client) => store.append(client, PROFILE, rows));
    // The earlier cutoff falls inside day 3 (its midnight row goes); its plan is made, then the later truncation
    // (cutoff: day 4) drops days 0–3 whole, day 3 included.
    const earlier = T0 + 3 * DAY_MILLIS + 1;
    const listed = await store.partitions(PROFILE);
    const stalePlan = await planTruncation(pool, listed, earlier);
    expect(stalePlan.boundary?.rowsBefore).toBe(1);
    const later = await planTruncation(pool, await store.partitions(PROFILE), T0 + 4 * DAY_MILLIS);
    expect(await inTransaction(pool, (client) => dropPartitions(client, later.wholePartitions))).toBe(8);

    // The earlier truncation's step, from its plan: the partition is gone, nothing to delete, no error.
    const boundary = stalePlan.boundary!.partition;
    expect(await inTransaction(pool, (client) => deleteBatch(client, boundary, earlier, 100))).toBe(0);
    // Its next plan, from the list it read before the drop: nothing left before its cutoff.
    const again = await inTransaction(pool, (client) => planTruncation(client, listed, earlier));
    expect(again.boundary).toBeNull();
    expect(await inTransaction(pool, (client) => dropPartitions(client, again.wholePartitions))).toBe(0);

    const { rows: left } = await pool.query<{ t: string }>(
      `SELECT timestamp_millis AS t FROM timeseries."ts_dataset_datasetProfile" ORDER BY 1`,
    );
    expect(left.map((r) => Number(r.t))).toEqual(rows.slice(8).map((r) => r.timestampMillis));
  });
});
