import type pg from "pg";
import { aspectTableName, dayStart, ensurePartitions, partitionName, qualified } from "./timeseries-tables";

export interface TimeseriesAspectRef {
  entityType: string;
  aspectName: string;
}

export interface TimeseriesRow {
  urn: string;
  timestampMillis: number;
  /** the aspect value as JSON text (already validated by the caller) */
  valueJson: string;
}

export interface TimeseriesPartition {
  table: string;
  fromMillis: number;
  toMillis: number;
  rowCount: number;
}

export interface TimeseriesSize extends TimeseriesAspectRef {
  table: string;
  rowCount: number;
  sizeBytes: number;
  oldestTimestampMillis: number | null;
  newestTimestampMillis: number | null;
}

/** A pool or a client in a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

/** PostgreSQL's answer when a row has no partition (e.g. another process dropped the day meanwhile). */
const NO_PARTITION = "23514";
/** PostgreSQL's undefined_table: a partition dropped (by a truncation) after it was listed */
const UNDEFINED_TABLE = "42P01";

/**
 * Time-series aspect rows: one range-partitioned table per aspect, one partition per UTC day, exact row counts per
 * partition kept in timeseries.partition in the same transaction as every write (see libs/db/README.md).
 */
export class TimeseriesStore {
  /** partitions this process has seen exist; a miss only costs one short DDL transaction */
  private readonly knownPartitions = new Set<string>();
  /** partition creations under way, by aspect table */
  private readonly creating = new Map<string, Promise<void>>();

  constructor(private readonly pool: pg.Pool) {}

  /**
   * Makes the day partitions `rows` need, each missing one in a short transaction of its own. Call it before opening
   * the transaction that appends them: inside it, that would need a second connection of the pool while holding one,
   * and enough concurrent requests reaching new days would each hold one and wait for another, for good.
   */
  async prepare(ref: TimeseriesAspectRef, rows: readonly TimeseriesRow[]): Promise<void> {
    if (rows.length > 0) await this.ensureDays(ref, aspectTableName(ref.entityType, ref.aspectName), rows);
  }

  /**
   * Appends rows of one aspect inside the caller's transaction (`client` has run BEGIN), into partitions `prepare`
   * made; one dropped since (by a truncation) fails the insert with an error isMissingPartition recognises. Returns how
   * many rows were written.
   */
  async append(client: pg.ClientBase, ref: TimeseriesAspectRef, rows: TimeseriesRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    const table = aspectTableName(ref.entityType, ref.aspectName);
    const perDay = new Map<number, number>();
    for (const row of rows) {
      const day = dayStart(row.timestampMillis);
      perDay.set(day, (perDay.get(day) ?? 0) + 1);
    }
    const perPartition = new Map([...perDay].map(([day, n]) => [partitionName(table, day), n]));
    // The rows travel as one JSON array of [urn, timestampMillis, value] built from the validated JSON texts: cheaper
    // for this process than pg's escaping of three array literals, and fewer bytes on the wire.
    const rowsJson = `[${rows.map((r) => `[${JSON.stringify(r.urn)},${r.timestampMillis},${r.valueJson}]`).join(",")}]`;
    await client.query(
      `INSERT INTO ${qualified(table)} (urn, timestamp_millis, value)
       SELECT r->>0, (r->>1)::bigint, r->2 FROM jsonb_array_elements($1::jsonb) AS r`,
      [rowsJson],
    );
    await client.query(
      `UPDATE timeseries.partition p SET row_count = p.row_count + d.n
       FROM unnest($1::text[], $2::bigint[]) AS d(table_name, n) WHERE p.table_name = d.table_name`,
      [[...perPartition.keys()], [...perPartition.values()]],
    );
    return rows.length;
  }

  /** Whether an error from `append` means a partition vanished under us; the caller may retry its transaction once. */
  isMissingPartition(error: unknown): boolean {
    const missing = (error as { code?: string })?.code === NO_PARTITION;
    if (missing) this.knownPartitions.clear();
    return missing;
  }

  /** Newest first. */
  async values(
    ref: TimeseriesAspectRef,
    urn: string,
    opts: { startTimeMillis?: number; endTimeMillis?: number; limit: number },
  ): Promise<Array<{ timestampMillis: number; valueJson: string }>> {
    const table = aspectTableName(ref.entityType, ref.aspectName);
    if (!(await this.tableExists(table))) return [];
    const { rows } = await this.pool.query<{ timestamp_millis: string; value: string }>(
      `SELECT timestamp_millis, value::text AS value FROM ${qualified(table)}
       WHERE urn = $1 AND timestamp_millis >= $2 AND timestamp_millis <= $3
       ORDER BY timestamp_millis DESC LIMIT $4`,
      [urn, opts.startTimeMillis ?? 0, opts.endTimeMillis ?? Number.MAX_SAFE_INTEGER, opts.limit],
    );
    return rows.map((r) => ({ timestampMillis: Number(r.timestamp_millis), valueJson: r.value }));
  }

  /** The aspect's partitions, oldest first, with exact row counts. */
  async partitions(ref: TimeseriesAspectRef, client: Queryable = this.pool): Promise<TimeseriesPartition[]> {
    const { rows } = await client.query<{
      table_name: string;
      from_millis: string;
      to_millis: string;
      row_count: string;
    }>(
      `SELECT table_name, from_millis, to_millis, row_count FROM timeseries.partition
       WHERE parent_table = $1 ORDER BY from_millis`,
      [aspectTableName(ref.entityType, ref.aspectName)],
    );
    return rows.map((r) => ({
      table: r.table_name,
      fromMillis: Number(r.from_millis),
      toMillis: Number(r.to_millis),
      rowCount: Number(r.row_count),
    }));
  }

  /**
   * Size, exact row count and time range of every aspect table holding rows. Counts come from the per-partition
   * counters, sizes from the catalog (on-disk bytes, dead rows included until vacuum), the time range from the
   * timestamp index of the oldest and newest non-empty partitions: nothing here scans the data.
   */
  async sizes(): Promise<TimeseriesSize[]> {
    // A truncation may drop a partition between this method's statements: each read then starts over, seeing the
    // partitions as they are now. Three times in a row would need partitions dropped faster than they can be read.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.sizesOnce();
      } catch (error) {
        if (attempt >= 3 || (error as { code?: string })?.code !== UNDEFINED_TABLE) throw error;
      }
    }
  }

  private async sizesOnce(): Promise<TimeseriesSize[]> {
    const { rows } = await this.pool.query<{
      entity_type: string;
      aspect_name: string;
      table_name: string;
      row_count: string;
      size_bytes: string;
      oldest_partition: string;
      newest_partition: string;
    }>(
      `SELECT a.entity_type, a.aspect_name, a.table_name,
              sum(p.row_count) AS row_count,
              sum(pg_total_relation_size(to_regclass(format('timeseries.%I', p.table_name)))) AS size_bytes,
              (array_agg(p.table_name ORDER BY p.from_millis) FILTER (WHERE p.row_count > 0))[1] AS oldest_partition,
              (array_agg(p.table_name ORDER BY p.from_millis DESC) FILTER (WHERE p.row_count > 0))[1] AS newest_partition
         FROM timeseries.aspect_table a JOIN timeseries.partition p ON p.parent_table = a.table_name
        GROUP BY a.entity_type, a.aspect_name, a.table_name
       HAVING sum(p.row_count) > 0
        ORDER BY a.entity_type, a.aspect_name`,
    );
    return Promise.all(
      rows.map(async (r) => {
        const [oldest, newest] = await Promise.all([
          this.pool.query<{ t: string | null }>(
            `SELECT min(timestamp_millis) AS t FROM ${qualified(r.oldest_partition)}`,
          ),
          this.pool.query<{ t: string | null }>(
            `SELECT max(timestamp_millis) AS t FROM ${qualified(r.newest_partition)}`,
          ),
        ]);
        const asNumber = (v: string | null | undefined) => (v == null ? null : Number(v));
        return {
          entityType: r.entity_type,
          aspectName: r.aspect_name,
          table: r.table_name,
          rowCount: Number(r.row_count),
          sizeBytes: Number(r.size_bytes),
          oldestTimestampMillis: asNumber(oldest.rows[0]?.t),
          newestTimestampMillis: asNumber(newest.rows[0]?.t),
        };
      }),
    );
  }

  private async ensureDays(ref: TimeseriesAspectRef, table: string, rows: readonly TimeseriesRow[]): Promise<void> {
    const days = new Set(rows.map((r) => dayStart(r.timestampMillis)));
    for (;;) {
      const missing = [...days].filter((day) => !this.knownPartitions.has(partitionName(table, day)));
      if (missing.length === 0) return;
      // Concurrent requests reaching a new day wait for one creation instead of queueing on the advisory lock.
      const inFlight = this.creating.get(table);
      if (inFlight) {
        await inFlight.catch(() => undefined);
        continue;
      }
      const creation = ensurePartitions(this.pool, ref.entityType, ref.aspectName, missing)
        .then(({ partitions }) => partitions.forEach((p) => this.knownPartitions.add(p)))
        .finally(() => this.creating.delete(table));
      this.creating.set(table, creation);
      await creation;
    }
  }

  private async tableExists(table: string): Promise<boolean> {
    const { rowCount } = await this.pool.query("SELECT 1 FROM timeseries.aspect_table WHERE table_name = $1", [table]);
    return rowCount === 1;
  }
}
