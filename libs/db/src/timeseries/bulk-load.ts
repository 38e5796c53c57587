import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { inTransaction } from "../transaction";
import { DAY_MILLIS, dayStart, ensurePartitions, partitionName, qualified } from "./timeseries-tables";

export interface BulkLoadOptions {
  entityType: string;
  aspectName: string;
  rows: number;
  /** the rows are spread evenly over this many UTC days, the last one the day of endMillis */
  days: number;
  endMillis: number;
  /**
   * true: endMillis is an exclusive upper bound (the last day is filled up to it, no row at or after it); false (the
   * default, what the tests and benchmarks are written against): the last day is filled whole
   */
  endExclusive?: boolean;
  /** how many distinct entities the rows belong to */
  urns: number;
}

/**
 * Loads synthetic time-series rows with COPY, for benchmarks and tests: rows spread evenly over `days` UTC days,
 * partitions created first, per-partition counters updated in the same transaction as the COPY.
 */
export async function bulkLoad(pool: pg.Pool, o: BulkLoadOptions): Promise<{ rows: number; partitions: number }> {
  const lastDay = o.endExclusive ? dayStart(o.endMillis - 1) : dayStart(o.endMillis);
  const firstDay = lastDay - (o.days - 1) * DAY_MILLIS;
  const span = o.endExclusive ? o.endMillis - firstDay : o.days * DAY_MILLIS;
  const step = span / o.rows;
  const timestampOf = (i: number) => Math.floor(firstDay + i * step);
  const { table } = await ensurePartitions(
    pool,
    o.entityType,
    o.aspectName,
    Array.from({ length: o.days }, (_, d) => firstDay + d * DAY_MILLIS),
  );
  const perDay = new Map<string, number>();
  for (let d = 0; d < o.days; d++) {
    // Rows i with timestampOf(i) inside day d: computed, not counted, so 5 million rows cost nothing here.
    const from = Math.ceil((d * DAY_MILLIS) / step);
    const to = Math.min(o.rows, Math.ceil(((d + 1) * DAY_MILLIS) / step));
    if (to > from) perDay.set(partitionName(table, firstDay + d * DAY_MILLIS), to - from);
  }
  await inTransaction(pool, async (client) => {
    const copy = client.query(copyFrom(`COPY ${qualified(table)} (urn, timestamp_millis, value) FROM STDIN`));
    await pipeline(Readable.from(lines(o, timestampOf)), copy);
    await client.query(
      `UPDATE timeseries.partition p SET row_count = p.row_count + d.n
       FROM unnest($1::text[], $2::bigint[]) AS d(table_name, n) WHERE p.table_name = d.table_name`,
      [[...perDay.keys()], [...perDay.values()]],
    );
  });
  await pool.query(`ANALYZE ${qualified(table)}`);
  return { rows: o.rows, partitions: perDay.size };
}

function* lines(o: BulkLoadOptions, timestampOf: (i: number) => number): Generator<string> {
  const chunk: string[] = [];
  for (let i = 0; i < o.rows; i++) {
    const ts = timestampOf(i);
    const urn = `urn:li:${o.entityType}:(urn:li:dataPlatform:bench,table${i % o.urns},PROD)`;
    chunk.push(`${urn}\t${ts}\t{"timestampMillis":${ts},"rowCount":${i % 100_000},"columnCount":${i % 50}}\n`);
    if (chunk.length === 10_000) yield chunk.splice(0).join("");
  }
  if (chunk.length > 0) yield chunk.join("");
}
