/**
 * truncateTimeseriesAspect's requests in one process, the gateway over real HTTP on real PostgreSQL partitions:
 * dry-run reports and validation (execution: truncation-tasks and truncation-timeouts).
 */
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { PROFILE, T0, TRUNCATE } from "./support/truncation";

describe("time-series truncation", () => {
  let h: Harness;
  let store: TimeseriesStore;

  const load = async (ref: TimeseriesAspectRef, timestamps: number[]) => {
    const rows = timestamps.map((t, i) => ({
      urn: `urn:li:${ref.entityType}:(urn:li:dataPlatform:x,t${i % 7},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t }),
    }));
    await store.prepare([{ ...ref, rows }]);
    await inTransaction(h.database.pool, (client) => store.append(client, ref, rows));
  };
  const timestampsOf = async (ref: TimeseriesAspectRef) => {
    const { rows } = await h.database.pool.query<{ t: string }>(
      `SELECT timestamp_millis AS t FROM timeseries."ts_${ref.entityType}_${ref.aspectName}" ORDER BY 1`,
    );
    return rows.map((r) => Number(r.t));
  };
  /** Drops every aspect table (their partitions go with them) and the bookkeeping. */
  const clear = async () => {
    const { rows } = await h.database.pool.query<{ table_name: string }>(
      "SELECT table_name FROM timeseries.aspect_table",
    );
    for (const r of rows) await h.database.pool.query(`DROP TABLE timeseries."${r.table_name}"`);
    await h.database.pool.query("DELETE FROM timeseries.aspect_table");
    store = new TimeseriesStore(h.database.pool); // forgets the partitions it had seen
  };

  beforeAll(async () => {
    h = await startGateway();
    store = new TimeseriesStore(h.database.pool);
  });
  afterAll(() => h.close());

  describe("dry run", () => {
    beforeAll(async () => {
      await clear();
      // 10 days x 100 rows; cutoffs below fall on and inside day boundaries.
      await load(
        PROFILE,
        Array.from({ length: 1000 }, (_, i) => T0 + Math.floor(i / 100) * DAY_MILLIS + (i % 100) * 1000),
      );
    });

    it("is the default, reports exact numbers and the strategy, and changes nothing", async () => {
      const cutoff = T0 + 5 * DAY_MILLIS + 50 * 1000; // 5 whole days + 50 rows of the sixth
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: cutoff });
      expect(res).toMatchObject({
        status: 200,
        body: {
          value:
            "Delete 550 out of 1000 rows (55.00%). Reindexing the aspect without the deleted records. This was a dry run. Run with dryRun = false to execute.",
          plan: { toDelete: 550, totalRows: 1000 }, // beside value (truncation-plan.int.spec.ts)
        },
      });
      expect(await timestampsOf(PROFILE)).toHaveLength(1000);
    });

    it("names a delete by query when only part of one day goes", async () => {
      const res = await h.post(TRUNCATE, {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 12_500,
        dryRun: true,
      });
      expect(res.body.value).toBe(
        "Delete 13 out of 1000 rows (1.30%). Issuing a delete by query request. This was a dry run. Run with dryRun = false to execute.",
      );
    });

    it("counts rows strictly older than the cutoff", async () => {
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: T0 });
      expect(res.body.value).toMatch(/^Delete 0 out of 1000 rows \(0\.00%\)/);
    });
  });

  describe("validation", () => {
    it.each([
      [{ aspect: "datasetProfile", endTimeMillis: 1 }, "entityType: is required (a string)"],
      [{ entityType: "dataset", endTimeMillis: 1 }, "aspect: is required (a string)"],
      [
        { entityType: "dataset", aspect: "datasetProfile" },
        "endTimeMillis: must be a whole number of epoch milliseconds",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: -1 }, "endTimeMillis: must be 0 or more"],
      [
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1.5 },
        "endTimeMillis: must be a whole number",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 0 }, "batchSize"],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 1_000_001 }, "batchSize"],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, timeoutSeconds: 0 }, "timeoutSeconds"],
      [
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, dryRun: "no" },
        "dryRun: must be true or false",
      ],
      [{ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, force: true }, "unknown field(s) force"],
    ])("refuses %p with a 400 naming the field", async (body, message) => {
      const res = await h.post(TRUNCATE, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toContain(message);
    });

    it("answers 404 listing the known time-series aspects for an unknown one", async () => {
      const res = await h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProperties", endTimeMillis: 1 });
      expect(res.status).toBe(404);
      expect(res.body.message).toContain(
        "known: dataset/datasetProfile, dataset/datasetUsageStatistics, dataset/operation",
      );
    });

    it("refuses a caller without TRUNCATE_TIMESERIES_INDEX", async () => {
      const res = await h.post(
        TRUNCATE,
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1 },
        systemClientHeaders("urn:li:corpuser:viewer"),
      );
      expect(res).toMatchObject({
        status: 403,
        body: { message: "urn:li:corpuser:viewer is unauthorized to truncate time-series indexes." },
      });
    });
  });
});
