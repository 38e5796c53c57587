import { createHash } from "node:crypto";
import type pg from "pg";
import { inTransaction } from "../transaction";

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

/**
 * Creates the aspect's table and the day partitions the given timestamps need, if missing. DDL runs in its own short
 * transaction under an advisory lock per table, so concurrent writers never race to create the same partition. An
 * ingestion that later fails leaves at most an empty partition behind.
 */
export async function ensurePartitions(
  pool: pg.Pool,
  entityType: string,
  aspectName: string,
  timestamps: Iterable<number>,
): Promise<{ table: string; partitions: string[] }> {
  const table = aspectTableName(entityType, aspectName);
  const days = [...new Set([...timestamps].map(dayStart))].sort((a, b) => a - b);
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`timeseries:${table}`]);
    const exists = await client.query("SELECT 1 FROM timeseries.aspect_table WHERE table_name = $1", [table]);
    if (exists.rowCount === 0) {
      await client.query(
        `CREATE TABLE ${qualified(table)} (
           urn TEXT NOT NULL,
           timestamp_millis BIGINT NOT NULL,
           value JSONB NOT NULL,
           ingested_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
         ) PARTITION BY RANGE (timestamp_millis)`,
      );
      // Truncation deletes and counts by time; reads go by entity, newest first.
      await client.query(`CREATE INDEX ${quote(`${table}_ts_idx`)} ON ${qualified(table)} (timestamp_millis)`);
      await client.query(
        `CREATE INDEX ${quote(`${table}_urn_ts_idx`)} ON ${qualified(table)} (urn, timestamp_millis DESC)`,
      );
      await client.query(
        "INSERT INTO timeseries.aspect_table (entity_type, aspect_name, table_name) VALUES ($1, $2, $3)",
        [entityType, aspectName, table],
      );
    }
    const present = await client.query<{ from_millis: string }>(
      "SELECT from_millis FROM timeseries.partition WHERE parent_table = $1 AND from_millis = ANY($2::bigint[])",
      [table, days],
    );
    const have = new Set(present.rows.map((r) => Number(r.from_millis)));
    for (const day of days.filter((d) => !have.has(d))) {
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
    return { table, partitions: days.map((d) => partitionName(table, d)) };
  });
}
