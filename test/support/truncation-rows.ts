/** The rows the truncation fault tests load and count: one day of datasetProfile rows, deleted in batches. */
import type pg from "pg";
import { bulkLoad } from "@mdp/db";

/** The day the rows fall in, and how many there are. */
export const DAY = Date.UTC(2026, 4, 1);
export const ROWS = 60_000;
const TABLE = 'timeseries."ts_dataset_datasetProfile"';

/** ROWS rows over one day, so everything is deleted in batches inside one partition; returns the rows to go. */
export async function loadDay(pool: pg.Pool, cutoff: number): Promise<number> {
  await pool.query("DELETE FROM timeseries.partition; DELETE FROM timeseries.aspect_table");
  await pool.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await bulkLoad(pool, {
    entityType: "dataset",
    aspectName: "datasetProfile",
    rows: ROWS,
    days: 1,
    endMillis: DAY,
    urns: 50,
  });
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${TABLE} WHERE timestamp_millis < $1`, [
    cutoff,
  ]);
  return Number(rows[0]!.n);
}

/** The rows left older and newer than the cutoff. */
export async function remaining(pool: pg.Pool, cutoff: number): Promise<{ older: number; newer: number }> {
  const { rows } = await pool.query<{ older: string; newer: string }>(
    `SELECT count(*) FILTER (WHERE timestamp_millis < $1) AS older,
            count(*) FILTER (WHERE timestamp_millis >= $1) AS newer FROM ${TABLE}`,
    [cutoff],
  );
  return { older: Number(rows[0]!.older), newer: Number(rows[0]!.newer) };
}
