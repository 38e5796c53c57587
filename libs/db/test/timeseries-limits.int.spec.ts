/**
 * What one caller may make the time-series store do (docs/limits.md): days per write, the accepted timestamps,
 * the partitions one aspect may hold, and reads that stay fast and exact across the most partitions an aspect can
 * have. Every refusal happens before anything is created.
 */
import pg from "pg";
import { AppError } from "@mdp/core";
import {
  DAY_MILLIS,
  DEFAULT_TIMESERIES_LIMITS,
  dropPartitions,
  ensurePartitions,
  inTransaction,
  planTruncation,
  TimeseriesStore,
  type TimeseriesRow,
} from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

const PROFILE = { entityType: "dataset", aspectName: "datasetProfile" };
const USAGE = { entityType: "dataset", aspectName: "datasetUsageStatistics" };
const OPERATION = { entityType: "dataset", aspectName: "operation" };
const URN = "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)";
const T0 = Date.UTC(2020, 0, 1);
const row = (t: number, urn = URN): TimeseriesRow => ({ urn, timestampMillis: t, valueJson: `{"t":${t}}` });
const days = (n: number, from = T0) => Array.from({ length: n }, (_, d) => from + d * DAY_MILLIS);

/** The error `promise` rejects with, which must be an AppError. */
async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe("time-series limits", () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const counts = async () => {
    const { rows } = await pool.query<{ tables: string; partitions: string; rows: string }>(
      `SELECT (SELECT count(*) FROM timeseries.aspect_table) AS tables,
              (SELECT count(*) FROM timeseries.partition) AS partitions,
              (SELECT coalesce(sum(row_count), 0) FROM timeseries.partition) AS rows`,
    );
    return { tables: Number(rows[0]!.tables), partitions: Number(rows[0]!.partitions), rows: Number(rows[0]!.rows) };
  };
  const write = async (store: TimeseriesStore, writes: Array<{ ref: typeof PROFILE; rows: TimeseriesRow[] }>) => {
    await store.prepare(writes.map((w) => ({ ...w.ref, rows: w.rows })));
    await inTransaction(pool, async (client) => {
      for (const w of writes) await store.append(client, w.ref, w.rows);
    });
  };

  beforeAll(async () => {
    db = await createTestDatabase("ts_limits");
    pool = new pg.Pool({ connectionString: db.url, max: 8 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("refuses a write on more distinct days than the cap, counted over all its aspects, creating nothing", async () => {
    const store = new TimeseriesStore(pool);
    const cap = DEFAULT_TIMESERIES_LIMITS.maxDaysPerWrite;
    // 60 days of one aspect and 41 of another: 101 partitions one transaction would lock.
    const error = await refusal(
      write(store, [
        { ref: PROFILE, rows: days(60).map((t) => row(t)) },
        { ref: USAGE, rows: days(41, T0 + 1000 * DAY_MILLIS).map((t) => row(t)) },
      ]),
    );
    expect(error.code).toBe("BAD_USER_INPUT");
    expect(error.message).toContain(`on 101 distinct days`);
    expect(error.message).toContain(`at most ${cap} (TIMESERIES_MAX_DAYS_PER_WRITE)`);
    expect(await counts()).toEqual({ tables: 0, partitions: 0, rows: 0 });

    // Many rows on few days are one partition each: exactly the cap is accepted.
    const atCap = days(cap).flatMap((t) => [row(t), row(t + 1000), row(t + 2000, "urn:li:dataset:(x,b,PROD)")]);
    await write(store, [{ ref: OPERATION, rows: atCap }]);
    expect(await counts()).toEqual({ tables: 1, partitions: cap, rows: 3 * cap });
    await pool.query("TRUNCATE timeseries.aspect_table CASCADE");
    await pool.query(`DROP TABLE timeseries."ts_dataset_operation"`);
  });

  it("accepts timestamps from 1970 to now plus the allowed skew, and refuses others before creating anything", async () => {
    const store = new TimeseriesStore(pool, { maxFutureMillis: 60_000 });
    const now = Date.now();
    for (const t of [-1, now + 3_600_000, 253_402_300_800_000, 1.5]) {
      const error = await refusal(write(store, [{ ref: PROFILE, rows: [row(T0), row(t)] }]));
      expect(error.code).toBe("BAD_USER_INPUT");
      expect(error.message).toMatch(/^rows\[1\]\.timestampMillis of dataset\/datasetProfile /);
    }
    expect(() => store.checkTimestamp(now + 3_600_000, "proposal.aspect.value.timestampMillis")).toThrow(
      /^proposal\.aspect\.value\.timestampMillis \d+ is in the future: it may be at most 60000 ms after now \(.*TIMESERIES_MAX_FUTURE_MS\)$/,
    );
    expect(await counts()).toEqual({ tables: 0, partitions: 0, rows: 0 });
    await write(store, [{ ref: PROFILE, rows: [row(0), row(now + 30_000)] }]);
    expect((await counts()).rows).toBe(2);
    await pool.query("TRUNCATE timeseries.aspect_table CASCADE");
    await pool.query(`DROP TABLE timeseries."ts_dataset_datasetProfile"`);
  });

  it("keeps each aspect within its partition budget; existing days stay writable and truncation frees room", async () => {
    const store = new TimeseriesStore(pool, { maxPartitionsPerAspect: 10 });
    await write(store, [{ ref: PROFILE, rows: days(8).map((t) => row(t)) }]);
    // 2 existing days and 3 new: 11 > 10, refused whole, nothing created (not even the first new day).
    const error = await refusal(
      write(store, [{ ref: PROFILE, rows: days(5, T0 + 6 * DAY_MILLIS).map((t) => row(t)) }]),
    );
    expect(error.code).toBe("CONFLICT");
    expect(error.status).toBe(409);
    expect(error.message).toBe(
      "Time-series aspect dataset/datasetProfile holds 8 day partitions and this write needs 3 more; one aspect may " +
        "hold at most 10 (TIMESERIES_MAX_PARTITIONS_PER_ASPECT). Truncate older rows (truncateTimeseriesAspect) or " +
        "write to days that already hold rows.",
    );
    expect(await counts()).toEqual({ tables: 1, partitions: 8, rows: 8 });
    // Another process (its own cache) is held to the same budget: it is checked in the database, under the lock.
    const other = new TimeseriesStore(pool, { maxPartitionsPerAspect: 10 });
    await expect(
      write(other, [{ ref: PROFILE, rows: days(3, T0 + 100 * DAY_MILLIS).map((t) => row(t)) }]),
    ).rejects.toThrow("holds 8 day partitions and this write needs 3 more");
    await write(store, [{ ref: PROFILE, rows: days(10).map((t) => row(t + 1)) }]);
    // Another aspect has a budget of its own.
    await write(store, [{ ref: USAGE, rows: days(10).map((t) => row(t)) }]);

    // A failed write's days are left empty; truncation drops those along with the full ones, and frees the budget.
    const partitions = await store.partitions(PROFILE);
    const cutoff = T0 + 4 * DAY_MILLIS;
    await pool.query("UPDATE timeseries.partition SET row_count = 0 WHERE table_name = $1", [partitions[0]!.table]);
    await pool.query(`DELETE FROM timeseries.${'"' + partitions[0]!.table + '"'}`);
    const plan = await planTruncation(pool, await store.partitions(PROFILE), cutoff);
    expect(plan.wholePartitions.map((p) => p.fromMillis)).toEqual(days(4));
    expect(plan.toDelete).toBe(6);
    await inTransaction(pool, (client) => dropPartitions(client, plan.wholePartitions));
    await write(store, [{ ref: PROFILE, rows: days(2, T0 + 200 * DAY_MILLIS).map((t) => row(t)) }]);
    const { rows } = await pool.query<{ t: string }>(
      `SELECT timestamp_millis AS t FROM timeseries."ts_dataset_datasetProfile" ORDER BY 1`,
    );
    // Exactly the rows at or after the cutoff are left, and the two new ones.
    expect(rows.map((r) => Number(r.t))).toEqual([
      ...days(4, cutoff).flatMap((t) => [t, t + 1]),
      ...days(2, T0 + 8 * DAY_MILLIS).map((t) => t + 1),
      ...days(2, T0 + 200 * DAY_MILLIS),
    ]);
  });

  it("reads across the most partitions an aspect may hold: newest first, exact, fast, and many at once", async () => {
    const max = DEFAULT_TIMESERIES_LIMITS.maxPartitionsPerAspect;
    const ref = { entityType: "chart", aspectName: "chartUsageStatistics" };
    const all = days(max);
    let started = performance.now();
    await ensurePartitions(pool, ref.entityType, ref.aspectName, all, max);
    const createMs = performance.now() - started;
    const store = new TimeseriesStore(pool);
    // One entity has a row on every 7th day; the newest days hold only other entities' rows.
    const mine = all.filter((_, i) => i % 7 === 0);
    const others = all.slice(-50).map((t) => row(t + 5, "urn:li:chart:(looker,other)"));
    for (let i = 0; i < mine.length; i += 100) {
      const rows = mine.slice(i, i + 100).map((t) => row(t, "urn:li:chart:(looker,mine)"));
      await write(store, [{ ref, rows }]);
    }
    await write(store, [{ ref, rows: others }]);
    await expect(store.prepare([{ ...ref, rows: [row(T0 - DAY_MILLIS)] }])).rejects.toThrow(
      `holds ${max} day partitions and this write needs 1 more`,
    );

    const newestFirst = [...mine].reverse();
    started = performance.now();
    const latest = await store.values(ref, "urn:li:chart:(looker,mine)", { limit: 3 });
    const latestMs = performance.now() - started;
    expect(latest.map((v) => v.timestampMillis)).toEqual(newestFirst.slice(0, 3));
    expect(latest[0]!.valueJson).toBe(`{"t": ${newestFirst[0]}}`);

    // Everything, with no range: every partition is looked at, a group at a time.
    started = performance.now();
    const everything = await store.values(ref, "urn:li:chart:(looker,mine)", { limit: 10_000 });
    const everythingMs = performance.now() - started;
    expect(everything.map((v) => v.timestampMillis)).toEqual(newestFirst);
    const ranged = await store.values(ref, "urn:li:chart:(looker,mine)", {
      startTimeMillis: mine[10]!,
      endTimeMillis: mine[20]! - 1,
      limit: 5,
    });
    expect(ranged.map((v) => v.timestampMillis)).toEqual(mine.slice(15, 20).reverse());

    // An entity with no rows at all: the worst case, every partition searched. Twenty at once (PostgreSQL's lock table
    // would not hold 20 statements locking every partition) all answer.
    started = performance.now();
    const misses = await Promise.all(
      Array.from({ length: 20 }, () => store.values(ref, "urn:li:chart:(looker,nobody)", { limit: 100 })),
    );
    const missesMs = performance.now() - started;
    expect(misses).toEqual(Array(20).fill([]));
    const sizes = await store.sizes();
    expect(sizes.find((s) => s.table === "ts_chart_chartUsageStatistics")).toMatchObject({
      rowCount: mine.length + others.length,
      oldestTimestampMillis: all[0],
      newestTimestampMillis: all.at(-1)! + 5,
    });
    process.stdout.write(
      `${max} partitions: created in ${Math.round(createMs)} ms; latest 3 in ${latestMs.toFixed(1)} ms; all ` +
        `${mine.length} in ${Math.round(everythingMs)} ms; 20 concurrent misses in ${Math.round(missesMs)} ms\n`,
    );
    expect(latestMs).toBeLessThan(500);
    expect(missesMs).toBeLessThan(15_000);
  });

  it("refuses a read limit above the maximum", async () => {
    const store = new TimeseriesStore(pool);
    await expect(store.values(PROFILE, URN, { limit: 10_001 })).rejects.toThrow(
      "limit must be a whole number from 1 to 10000",
    );
  });
});
