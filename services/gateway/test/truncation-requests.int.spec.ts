/**
 * truncateTimeseriesAspect's requests in one process, the gateway over real HTTP on real PostgreSQL partitions:
 * dry-run reports and validation (execution: truncation-tasks and truncation-timeouts).
 */
import { DAY_MILLIS } from "@mdp/db";
import { systemClientHeaders } from "./support/gateway-harness";
import { PROFILE, T0, TRUNCATE } from "./support/truncation";
import { startTruncationHarness } from "./support/truncation-harness";

describe("time-series truncation", () => {
  const tr = startTruncationHarness();
  const { load, timestampsOf, clear } = tr;

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
      const res = await tr.gateway.post(TRUNCATE, {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: cutoff,
      });
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
      const res = await tr.gateway.post(TRUNCATE, {
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
      const res = await tr.gateway.post(TRUNCATE, {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0,
      });
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
      const res = await tr.gateway.post(TRUNCATE, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toContain(message);
    });

    it("answers 404 listing the known time-series aspects for an unknown one", async () => {
      const res = await tr.gateway.post(TRUNCATE, {
        entityType: "dataset",
        aspect: "datasetProperties",
        endTimeMillis: 1,
      });
      expect(res.status).toBe(404);
      expect(res.body.message).toContain(
        "known: dataset/datasetProfile, dataset/datasetUsageStatistics, dataset/operation",
      );
    });

    it("refuses a caller without TRUNCATE_TIMESERIES_INDEX", async () => {
      const res = await tr.gateway.post(
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
