import { createHash } from "node:crypto";
import type pg from "pg";
import { inTransaction } from "../transaction";
import { DEFAULT_TIMESERIES_LIMITS, partitionBudgetExceeded } from "./timeseries-limits";

/** Time-series partitions are UTC days. */
export const DAY_MILLIS = 86_400_000;

export const dayStart = (millis: number): number => Math.floor(millis / DAY_MILLIS) * DAY_MILLIS;

/** An identifier, double-quoted; only our own generated names reach here, but quoting keeps case and is safe. */
export const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

const MAX_TABLE_NAME = 50; // PostgreSQL truncates identifiers at 63 bytes; partitions add "_p" + 8 digits

/** The table of one time-series aspect: readable when short enough, otherwise a stable hash of the exact names. */
export function aspectTableName(entityType: string, aspectName: string): string {
  const readable = `ts_${entityType}_${aspectName}`;
  if (readable.length <= MAX_TABLE_NAME) return readable;
  return `ts_${createHash("sha256").update(`${entityType}\0${aspectName}`).digest("hex").slice(0, 24)}`;
}

export function partitionName(table: string, fromMillis: number): string {
  return `${table}_p${new Date(fromMillis).toISOString().slice(0, 10).replace(/-/g, "")}`;
}

/** `schema.table` for SQL text. */
export const qualified = (table: string): string => `timeseries.${quote(table)}`;

/** How many partitions one DDL transaction creates: each holds ~6 locks (table, toast, indexes) until it commits. */
export const PARTITIONS_PER_CREATE = 32;

/**
 * Creates the aspect's table and the day partitions the given timestamps need, if missing. DDL runs in short
 * transactions of its own (at most PARTITIONS_PER_CREATE partitions each) under an advisory lock per table, so
 * concurrent writers never race to create the same partition. The aspect's partition budget is checked under that
 * lock, for all the missing days before any is created: a write it refuses creates nothing. An ingestion that later
 * fails leaves at most empty partitions behind (truncation drops those too).
 */
export async function ensurePartitions(
  pool: pg.Pool,
  entityType: string,
  aspectName: string,
  timestamps: Iterable<number>,
  maxPartitions: number = DEFAULT_TIMESERIES_LIMITS.maxPartitionsPerAspect,
): Promise<{ table: string; partitions: string[] }> {
  const table = aspectTableName(entityType, aspectName);
  const days = [...new Set([...timestamps].map(dayStart))].sort((a, b) => a - b);
  for (let first = true; ; first = false) {
    const remaining = await inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`timeseries:${table}`]);
      if (first) await createAspectTable(client, entityType, aspectName, table);
      const present = await client.query<{ from_millis: string }>(
        "SELECT from_millis FROM timeseries.partition WHERE parent_table = $1 AND from_millis = ANY($2::bigint[])",
        [table, days],
      );
      const have = new Set(present.rows.map((r) => Number(r.from_millis)));
      const missing = days.filter((d) => !have.has(d));
      if (missing.length === 0) return 0;
      const { rows } = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM timeseries.partition WHERE parent_table = $1",
        [table],
      );
      const existing = Number(rows[0]!.n);
      if (existing + missing.length > maxPartitions) {
        throw partitionBudgetExceeded(`${entityType}/${aspectName}`, existing, missing.length, maxPartitions);
      }
      for (const day of missing.slice(0, PARTITIONS_PER_CREATE)) await createPartition(client, table, day);
      return missing.length - PARTITIONS_PER_CREATE;
    });
    if (remaining <= 0) return { table, partitions: days.map((d) => partitionName(table, d)) };
  }
}

async function createAspectTable(client: pg.ClientBase, entityType: string, aspectName: string, table: string) {
  const exists = await client.query("SELECT 1 FROM timeseries.aspect_table WHERE table_name = $1", [table]);
  if (exists.rowCount !== 0) return;
  await client.query(
    `CREATE TABLE ${qualified(table)} (
       urn TEXT NOT NULL,
       timestamp_millis BIGINT NOT NULL,
       value JSONB NOT NULL,
       ingested_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
       system_metadata JSONB
     ) PARTITION BY RANGE (timestamp_millis)`,
  );
  // Truncation deletes and counts by time; reads go by entity, newest first.
  await client.query(`CREATE INDEX ${quote(`${table}_ts_idx`)} ON ${qualified(table)} (timestamp_millis)`);
  await client.query(
    `CREATE INDEX ${quote(`${table}_urn_ts_idx`)} ON ${qualified(table)} (urn, timestamp_millis DESC)`,
  );
  await client.query("INSERT INTO timeseries.aspect_table (entity_type, aspect_name, table_name) VALUES ($1, $2, $3)", [
    entityType,
    aspectName,
    table,
  ]);
}

async function createPartition(client: pg.ClientBase, table: string, day: number) {
  const partition = partitionName(table, day);
  // CREATE + ATTACH, not CREATE ... PARTITION OF: attaching locks the parent in SHARE UPDATE EXCLUSIVE mode only, so
  // writers to the other days go on while a new day is added instead of queueing behind an ACCESS EXCLUSIVE lock.
  await client.query(`CREATE TABLE ${qualified(partition)} (LIKE ${qualified(table)} INCLUDING DEFAULTS)`);
  await client.query(
    `ALTER TABLE ${qualified(table)} ATTACH PARTITION ${qualified(partition)} FOR VALUES FROM (${day}) TO (${day + DAY_MILLIS})`,
  );
  await client.query(
    "INSERT INTO timeseries.partition (table_name, parent_table, from_millis, to_millis) VALUES ($1, $2, $3, $4)",
    [partition, table, day, day + DAY_MILLIS],
  );
}
