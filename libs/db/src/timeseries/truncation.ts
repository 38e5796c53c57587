import type pg from "pg";
import { inTransaction, setStatementTimeout } from "../transaction";
import { qualified } from "./timeseries-tables";
import type { Queryable, TimeseriesPartition } from "./timeseries.store";

export type TruncationStrategy = "reindex" | "deleteByQuery";

export interface TruncationPlan {
  totalRows: number;
  /** exact number of rows with timestamp_millis < cutoff */
  toDelete: number;
  /**
   * partitions entirely before the cutoff: dropped whole. Empty ones are included (left by a write that failed after
   * its days were made, or emptied by an earlier truncation): each counts against the aspect's partition budget.
   */
  wholePartitions: TimeseriesPartition[];
  /** the partition the cutoff falls inside, with how many of its rows are older than the cutoff */
  boundary: { partition: TimeseriesPartition; rowsBefore: number } | null;
  strategy: TruncationStrategy;
}

/**
 * What truncating `ref` at `cutoff` deletes, exactly, without scanning: whole partitions are counted by their
 * counters, only the boundary partition is counted (through its timestamp index).
 */
export async function planTruncation(
  db: Queryable,
  partitions: TimeseriesPartition[],
  cutoff: number,
): Promise<TruncationPlan> {
  const wholePartitions = partitions.filter((p) => p.toMillis <= cutoff);
  const inside = partitions.find((p) => p.fromMillis < cutoff && cutoff < p.toMillis && p.rowCount > 0);
  let boundary: TruncationPlan["boundary"] = null;
  // The partitions were listed before this statement: another truncation may have dropped the boundary since.
  if (inside && (await holdPartition(db, inside.table))) {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${qualified(inside.table)} WHERE timestamp_millis < $1`,
      [cutoff],
    );
    boundary = { partition: inside, rowsBefore: Number(rows[0]?.n ?? 0) };
  }
  const totalRows = partitions.reduce((sum, p) => sum + p.rowCount, 0);
  const toDelete = wholePartitions.reduce((sum, p) => sum + p.rowCount, 0) + (boundary?.rowsBefore ?? 0);
  // DataHub reindexes when most of an index goes; here "reindexing" is dropping whole partitions.
  // Dropping empty partitions deletes no rows, so they do not decide the strategy the dry run reports.
  const dropsRows = wholePartitions.some((p) => p.rowCount > 0);
  const strategy = dropsRows || toDelete * 2 > totalRows ? "reindex" : "deleteByQuery";
  return { totalRows, toDelete, wholePartitions, boundary, strategy };
}

/** How many partitions one transaction drops: each commit is short, yet a long history is not one commit per day. */
export const PARTITIONS_PER_DROP = 16;

/**
 * Drops partitions and their bookkeeping in the caller's transaction; returns the rows they held. Partitions an earlier
 * attempt already dropped are skipped. A short lock timeout keeps a long reader of the aspect from making writers queue
 * behind the DROP (the step then fails and is retried).
 */
export async function dropPartitions(client: pg.ClientBase, partitions: TimeseriesPartition[]): Promise<number> {
  await client.query("SET LOCAL lock_timeout = '2s'");
  const { rows } = await client.query<{ table_name: string; row_count: string }>(
    "DELETE FROM timeseries.partition WHERE table_name = ANY($1::text[]) RETURNING table_name, row_count",
    [partitions.map((p) => p.table)],
  );
  if (rows.length === 0) return 0;
  await client.query(`DROP TABLE ${rows.map((r) => qualified(r.table_name)).join(", ")}`);
  return rows.reduce((sum, r) => sum + Number(r.row_count), 0);
}

/**
 * Whether a partition still exists, holding its bookkeeping row (FOR KEY SHARE) to the end of the caller's
 * transaction: a truncation that drops it (dropPartitions deletes that row first) waits for this one, and one that
 * dropped it already leaves no row. So two truncations of one aspect that overlap never read a dropped table (which
 * PostgreSQL would refuse as a relation that does not exist) from a plan made before the other's drop.
 */
async function holdPartition(db: Queryable, table: string): Promise<boolean> {
  const { rows } = await db.query("SELECT 1 FROM timeseries.partition WHERE table_name = $1 FOR KEY SHARE", [table]);
  return rows.length > 0;
}

/**
 * Deletes at most `batchSize` rows older than the cutoff from one partition, and its counter, in the caller's
 * transaction; 0 when another truncation dropped the partition after this one planned (its rows are gone either way).
 */
export async function deleteBatch(
  client: pg.ClientBase,
  partition: TimeseriesPartition,
  cutoff: number,
  batchSize: number,
): Promise<number> {
  if (!(await holdPartition(client, partition.table))) return 0;
  const { rowCount } = await client.query(
    `DELETE FROM ${qualified(partition.table)} WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM ${qualified(partition.table)} WHERE timestamp_millis < $1 LIMIT $2))`,
    [cutoff, batchSize],
  );
  const deleted = rowCount ?? 0;
  if (deleted > 0) {
    await client.query("UPDATE timeseries.partition SET row_count = row_count - $2 WHERE table_name = $1", [
      partition.table,
      deleted,
    ]);
  }
  return deleted;
}

/** Partitions one size statement measures: each measured table is locked until its statement's transaction ends. */
const SIZE_GROUP = 128;

/** On-disk bytes of one partition: its heap (with TOAST) and its indexes. */
export interface RelationBytes {
  tableBytes: number;
  indexBytes: number;
}

/**
 * Table and index bytes of each partition that still exists (pg_table_size, pg_indexes_size), SIZE_GROUP per
 * statement on the pool (outside any transaction: the locks go with each statement). A partition dropped meanwhile
 * is left out; an unknown one is 0.
 */
export async function partitionBytes(
  db: Queryable,
  tables: readonly string[],
  deadline?: number,
): Promise<Map<string, RelationBytes>> {
  const sizes = new Map<string, RelationBytes>();
  for (let i = 0; i < tables.length; i += SIZE_GROUP) {
    // Measuring waits for a lock on each table: behind a long DDL or DROP, only as long as the caller has.
    const query = async (c: Queryable) => {
      if (deadline !== undefined) await setStatementTimeout(c as pg.ClientBase, deadline - Date.now());
      return c.query<{ t: string; table_bytes: string | null; index_bytes: string | null }>(
        `SELECT t, pg_table_size(r) AS table_bytes, pg_indexes_size(r) AS index_bytes
         FROM unnest($1::text[]) AS t, LATERAL (SELECT to_regclass(format('timeseries.%I', t)) AS r) AS rel
        WHERE r IS NOT NULL`,
        [tables.slice(i, i + SIZE_GROUP)],
      );
    };
    const { rows } = deadline === undefined ? await query(db) : await inTransaction(db as pg.Pool, query);
    for (const r of rows) {
      sizes.set(r.t, { tableBytes: Number(r.table_bytes ?? 0), indexBytes: Number(r.index_bytes ?? 0) });
    }
  }
  return sizes;
}

/**
 * The sum of partitionBytes: what an aspect's partitions take on disk now. `deadline` (epoch ms): each statement runs
 * in a short transaction whose statement_timeout ends with it.
 */
export async function aspectBytes(db: pg.Pool, tables: readonly string[], deadline?: number): Promise<RelationBytes> {
  let tableBytes = 0;
  let indexBytes = 0;
  for (const size of (await partitionBytes(db, tables, deadline)).values()) {
    tableBytes += size.tableBytes;
    indexBytes += size.indexBytes;
  }
  return { tableBytes, indexBytes };
}
