/**
 * The gateway the truncation tests run against (truncation-{requests,tasks,timeouts}.int.spec.ts), started in beforeAll
 * and closed in afterAll, and the time-series and task helpers those tests call. Call it once inside a describe; `gateway` and
 * `store` are set by the time the tests run.
 */
import { inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { startGateway, startTruncationWorker, type Harness } from "./gateway-harness";
import { TRUNCATE, waitForTaskState } from "./truncation";

export function startTruncationHarness() {
  let worker: { close(): Promise<void> } | undefined;
  const tr = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    store: undefined as unknown as TimeseriesStore,
    /** Appends a row per timestamp, spread over 7 urns. */
    load: async (ref: TimeseriesAspectRef, timestamps: number[]) => {
      const rows = timestamps.map((t, i) => ({
        urn: `urn:li:${ref.entityType}:(urn:li:dataPlatform:x,t${i % 7},PROD)`,
        timestampMillis: t,
        valueJson: JSON.stringify({ timestampMillis: t }),
      }));
      await tr.store.prepare([{ ...ref, rows }]);
      await inTransaction(tr.gateway.database.pool, (client) => tr.store.append(client, ref, rows));
    },
    timestampsOf: async (ref: TimeseriesAspectRef) => {
      const { rows } = await tr.gateway.database.pool.query<{ t: string }>(
        `SELECT timestamp_millis AS t FROM timeseries."ts_${ref.entityType}_${ref.aspectName}" ORDER BY 1`,
      );
      return rows.map((r) => Number(r.t));
    },
    /** The rows the partitions' counters hold. */
    counters: async (ref: TimeseriesAspectRef) => (await tr.store.partitions(ref)).reduce((s, p) => s + p.rowCount, 0),
    /** Drops every aspect table (their partitions go with them) and the bookkeeping. */
    clear: async () => {
      const pool = tr.gateway.database.pool;
      const { rows } = await pool.query<{ table_name: string }>("SELECT table_name FROM timeseries.aspect_table");
      for (const r of rows) await pool.query(`DROP TABLE timeseries."${r.table_name}"`);
      await pool.query("DELETE FROM timeseries.aspect_table");
      tr.store = new TimeseriesStore(pool); // forgets the partitions it had seen
    },
    /** A truncation worker for this test alone: closed after it. */
    startWorker: async () => {
      worker = await startTruncationWorker(tr.gateway);
    },
    /** truncateTimeseriesAspect with dryRun false: the task's id. */
    startTask: async (request: Record<string, unknown>) =>
      (await tr.gateway.post(TRUNCATE, { ...request, dryRun: false })).body.value as string,
    waitForState: (taskId: string, states: string[], timeoutMs?: number) =>
      waitForTaskState(tr.gateway, taskId, states, timeoutMs),
  };

  beforeAll(async () => {
    tr.gateway = await startGateway();
    tr.store = new TimeseriesStore(tr.gateway.database.pool);
  });
  afterEach(async () => {
    await worker?.close();
    worker = undefined;
  });
  afterAll(() => tr.gateway.close());
  return tr;
}
