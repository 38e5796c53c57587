/**
 * getIndexSizes reads the partitions in several statements; a truncation dropping one of them in between (as an
 * operator polling sizes during a large truncation would see) must not turn the read into an error.
 */
import pg from "pg";
import { DAY_MILLIS, dropPartitions, inTransaction, TimeseriesStore } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

const REF = { entityType: "dataset", aspectName: "datasetProfile" };
const T0 = Date.UTC(2026, 0, 1);

describe("TimeseriesStore.sizes", () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase("sizes");
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it("reads the partitions as they are when one is dropped between its statements", async () => {
    const store = new TimeseriesStore(pool);
    const rows = [0, 1, 2].map((day) => ({
      urn: "urn:li:dataset:x",
      timestampMillis: T0 + day * DAY_MILLIS,
      valueJson: `{"day":${day}}`,
    }));
    await store.prepare([{ ...REF, rows }]);
    await inTransaction(pool, (client) => store.append(client, REF, rows));
    const [oldest] = await store.partitions(REF);

    // A pool through which sizes() reads, on which a truncation drops the oldest partition right after the first
    // statement (the one that lists the partitions) has run.
    let dropped = false;
    const racing = Object.create(pool) as pg.Pool;
    racing.query = (async (...args: Parameters<pg.Pool["query"]>) => {
      const result = await (pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
      if (!dropped) {
        dropped = true;
        await inTransaction(pool, (client) => dropPartitions(client, [oldest!]));
      }
      return result;
    }) as pg.Pool["query"];

    const sizes = await new TimeseriesStore(racing).sizes();
    expect(dropped).toBe(true);
    expect(sizes).toEqual([
      expect.objectContaining({
        entityType: "dataset",
        aspectName: "datasetProfile",
        rowCount: 2,
        oldestTimestampMillis: T0 + DAY_MILLIS,
        newestTimestampMillis: T0 + 2 * DAY_MILLIS,
      }),
    ]);
  });
});
