import type pg from "pg";
import { badInput } from "@mdp/core";
import {
  checkTimestamp,
  DEFAULT_TIMESERIES_LIMITS,
  MAX_VALUES_PER_READ,
  tooManyDays,
  type TimeseriesLimits,
} from "./timeseries-limits";
import { aspectBytes, type RelationBytes } from "./truncation";
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
  /** the proposal's systemMetadata as JSON text (DataHub's SystemMetadata), kept with the row; absent: none sent */
  systemMetadataJson?: string;
}

/** A row as a read answers it: its time, its value and the systemMetadata it was written with, as JSON texts. */
export type TimeseriesValue = Pick<TimeseriesRow, "timestampMillis" | "valueJson" | "systemMetadataJson">;

/** The rows of one aspect in one write. */
export interface TimeseriesWrite extends TimeseriesAspectRef {
  rows: readonly TimeseriesRow[];
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

/** Partitions one read statement spans: the first, and at most (see TimeseriesStore.values). */
const READ_GROUP_MIN = 4;
const READ_GROUP_MAX = 64;
/** Partitions one statement of TimeseriesStore.sizes measures. */
const SIZE_GROUP = 128;

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

  readonly limits: TimeseriesLimits;

  constructor(
    private readonly pool: pg.Pool,
    limits: Partial<TimeseriesLimits> = {},
  ) {
    this.limits = { ...DEFAULT_TIMESERIES_LIMITS, ...limits };
  }

  /** Refuses (400, naming `field` and the accepted range) a timestampMillis a write may not carry. */
  checkTimestamp(timestampMillis: number, field: string): void {
    checkTimestamp(timestampMillis, field, this.limits);
  }

  /**
   * Checks one write (every aspect it touches) against the limits, then makes the day partitions it needs in short
   * transactions of their own. Call it before opening the transaction that appends the rows: inside it, that would
   * need a second connection of the pool while holding one, and enough concurrent requests reaching new days would
   * each hold one and wait for another, for good. The checks come before anything is created, so a refused write
   * leaves nothing behind: timestamps in range, at most maxDaysPerWrite (aspect, day) pairs in all, since the write's
   * transaction locks each of those partitions, and each aspect within its partition budget.
   */
  async prepare(writes: readonly TimeseriesWrite[]): Promise<void> {
    const now = Date.now();
    const daysByWrite = writes.map((w) => {
      const days = new Set<number>();
      for (let i = 0; i < w.rows.length; i++) {
        const t = w.rows[i]!.timestampMillis;
        checkTimestamp(t, `rows[${i}].timestampMillis of ${w.entityType}/${w.aspectName}`, this.limits, now);
        days.add(dayStart(t));
      }
      return days;
    });
    const total = daysByWrite.reduce((sum, days) => sum + days.size, 0);
    if (total > this.limits.maxDaysPerWrite) throw tooManyDays(total, this.limits);
    for (const [i, w] of writes.entries()) {
      if (w.rows.length > 0) await this.ensureDays(w, aspectTableName(w.entityType, w.aspectName), daysByWrite[i]!);
    }
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
    // The rows travel as one JSON array of [urn, timestampMillis, value, systemMetadata] built from the validated JSON
    // texts: cheaper for this process than pg's escaping of array literals, and fewer bytes on the wire.
    const rowsJson = `[${rows
      .map((r) => `[${JSON.stringify(r.urn)},${r.timestampMillis},${r.valueJson},${r.systemMetadataJson ?? "null"}]`)
      .join(",")}]`;
    await client.query(
      `INSERT INTO ${qualified(table)} (urn, timestamp_millis, value, system_metadata)
       SELECT r->>0, (r->>1)::bigint, r->2, NULLIF(r->3, 'null'::jsonb) FROM jsonb_array_elements($1::jsonb) AS r`,
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

  /**
   * An entity's rows, newest first, at most `limit` (≤ MAX_VALUES_PER_READ). The partitions in the time range are
   * read newest first, a few at a time (the query's range names only them, so PostgreSQL prunes, plans and locks just
   * those), until `limit` rows are found: a read with no range touches the newest days only, and even a read that
   * must look through every partition of the aspect never holds more than READ_GROUP_MAX partitions' locks at once.
   */
  async values(
    ref: TimeseriesAspectRef,
    urn: string,
    opts: { startTimeMillis?: number; endTimeMillis?: number; limit: number },
  ): Promise<TimeseriesValue[]> {
    if (!Number.isSafeInteger(opts.limit) || opts.limit < 1 || opts.limit > MAX_VALUES_PER_READ) {
      throw badInput(`limit must be a whole number from 1 to ${MAX_VALUES_PER_READ}`);
    }
    const start = opts.startTimeMillis ?? 0;
    const end = opts.endTimeMillis ?? Number.MAX_SAFE_INTEGER;
    const table = aspectTableName(ref.entityType, ref.aspectName);
    const { rows: partitions } = await this.pool.query<{ from_millis: string; to_millis: string; row_count: string }>(
      `SELECT from_millis, to_millis, row_count FROM timeseries.partition
        WHERE parent_table = $1 AND to_millis > $2 AND from_millis <= $3 ORDER BY from_millis DESC`,
      [table, start, end],
    );
    const found: TimeseriesValue[] = [];
    // Recent rows are what most reads want: the first group is small, later ones grow.
    for (let i = 0, size = READ_GROUP_MIN; i < partitions.length && found.length < opts.limit;) {
      const group = partitions.slice(i, i + size);
      i += group.length;
      size = Math.min(size * 2, READ_GROUP_MAX);
      if (group.every((p) => p.row_count === "0")) continue;
      const { rows } = await this.pool.query<{
        timestamp_millis: string;
        value: string;
        system_metadata: string | null;
      }>(
        `SELECT timestamp_millis, value::text AS value, system_metadata::text AS system_metadata FROM ${qualified(table)}
         WHERE urn = $1 AND timestamp_millis >= $2 AND timestamp_millis <= $3
         ORDER BY timestamp_millis DESC LIMIT $4`,
        [
          urn,
          Math.max(start, Number(group.at(-1)!.from_millis)),
          Math.min(end, Number(group[0]!.to_millis) - 1),
          opts.limit - found.length,
        ],
      );
      for (const r of rows) {
        found.push({
          timestampMillis: Number(r.timestamp_millis),
          valueJson: r.value,
          ...(r.system_metadata !== null && { systemMetadataJson: r.system_metadata }),
        });
      }
    }
    return found;
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
  async sizes(db: Queryable = this.pool): Promise<TimeseriesSize[]> {
    // A truncation may drop a partition between this method's statements: each read then starts over, seeing the
    // partitions as they are now. Three times in a row would need partitions dropped faster than they can be read.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.sizesOnce(db);
      } catch (error) {
        if (attempt >= 3 || (error as { code?: string })?.code !== UNDEFINED_TABLE) throw error;
      }
    }
  }

  private async sizesOnce(db: Queryable): Promise<TimeseriesSize[]> {
    const { rows } = await db.query<{
      entity_type: string;
      aspect_name: string;
      table_name: string;
      row_count: string;
      partitions: string[];
      oldest_partition: string;
      newest_partition: string;
    }>(
      `SELECT a.entity_type, a.aspect_name, a.table_name,
              sum(p.row_count) AS row_count,
              array_agg(p.table_name) AS partitions,
              (array_agg(p.table_name ORDER BY p.from_millis) FILTER (WHERE p.row_count > 0))[1] AS oldest_partition,
              (array_agg(p.table_name ORDER BY p.from_millis DESC) FILTER (WHERE p.row_count > 0))[1] AS newest_partition
         FROM timeseries.aspect_table a JOIN timeseries.partition p ON p.parent_table = a.table_name
        GROUP BY a.entity_type, a.aspect_name, a.table_name
       HAVING sum(p.row_count) > 0
        ORDER BY a.entity_type, a.aspect_name`,
    );
    return Promise.all(
      rows.map(async (r) => {
        const [oldest, newest, sizeBytes] = await Promise.all([
          db.query<{ t: string | null }>(`SELECT min(timestamp_millis) AS t FROM ${qualified(r.oldest_partition)}`),
          db.query<{ t: string | null }>(`SELECT max(timestamp_millis) AS t FROM ${qualified(r.newest_partition)}`),
          this.partitionBytes(r.partitions, db),
        ]);
        const asNumber = (v: string | null | undefined) => (v == null ? null : Number(v));
        return {
          entityType: r.entity_type,
          aspectName: r.aspect_name,
          table: r.table_name,
          rowCount: Number(r.row_count),
          sizeBytes,
          oldestTimestampMillis: asNumber(oldest.rows[0]?.t),
          newestTimestampMillis: asNumber(newest.rows[0]?.t),
        };
      }),
    );
  }

  /**
   * Table and index bytes the partitions take on disk now (a truncation's before and after), on the pool; `deadline`
   * (epoch ms) bounds the wait for each table's lock (statement_timeout).
   */
  relationBytes(tables: readonly string[], deadline?: number): Promise<RelationBytes> {
    return aspectBytes(this.pool, tables, deadline);
  }

  /**
   * On-disk bytes of the partitions, SIZE_GROUP at a time: measuring a table locks it and its indexes until the
   * statement's transaction ends, and thousands of partitions in one statement would fill PostgreSQL's lock table.
   */
  private async partitionBytes(partitions: readonly string[], db: Queryable): Promise<number> {
    let bytes = 0;
    for (let i = 0; i < partitions.length; i += SIZE_GROUP) {
      const { rows } = await db.query<{ n: string | null }>(
        `SELECT sum(pg_total_relation_size(to_regclass(format('timeseries.%I', t)))) AS n FROM unnest($1::text[]) AS t`,
        [partitions.slice(i, i + SIZE_GROUP)],
      );
      bytes += Number(rows[0]?.n ?? 0);
    }
    return bytes;
  }

  private async ensureDays(ref: TimeseriesAspectRef, table: string, days: ReadonlySet<number>): Promise<void> {
    for (;;) {
      const missing = [...days].filter((day) => !this.knownPartitions.has(partitionName(table, day)));
      if (missing.length === 0) return;
      // Concurrent requests reaching a new day wait for one creation instead of queueing on the advisory lock.
      const inFlight = this.creating.get(table);
      if (inFlight) {
        await inFlight.catch(() => undefined);
        continue;
      }
      const max = this.limits.maxPartitionsPerAspect;
      const creation = ensurePartitions(this.pool, ref.entityType, ref.aspectName, missing, max)
        .then(({ partitions }) => partitions.forEach((p) => this.knownPartitions.add(p)))
        .finally(() => this.creating.delete(table));
      this.creating.set(table, creation);
      await creation;
    }
  }
}
