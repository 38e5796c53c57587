import { METADATA_CHANGE_LOG } from "@mdp/core";
import type { Queryable } from "../timeseries/timeseries.store";
import { PLATFORM_EVENT_LIMITS, type PlatformEventRow } from "./platform-event.repository";

/**
 * A consumer of the platform-event outbox read in partitions (platform_event_partition; docs/evaluation-on-change.md
 * "Partitions"): events by a hash of their entity urn, so every change to one entity is in one partition and read in
 * order. Each partition has its own position, and one worker at a time holds it under a lease (Kafka's consumer group,
 * on PostgreSQL): N workers read N partitions in parallel, and a dead worker's are taken over once its lease lapses.
 */

/** The partition of an entity urn among `partitions` (SQL, over a text expression): stable across processes. */
export const partitionOfSql = (urn: string, partitions: string) =>
  `mod(hashtext(${urn})::int8 + 2147483648, ${partitions})::int`;

/**
 * Makes the consumer's rows one layout of `partitions` (in its own transaction: `client` must be in one). Already so:
 * nothing changes. Otherwise (the first start, or ON_CHANGE_PARTITIONS changed) every partition starts again from the
 * slowest position there was (of the old layout, or of the consumer's single cursor before partitions), so nothing is
 * skipped: events past it that some partition had read are read again (at least once). `onRelayout` runs in the same
 * transaction (re-partitioning what the consumer keeps per partition). One layout change at a time (an advisory lock).
 */
export async function ensurePartitionLayout(
  client: Queryable,
  consumer: string,
  partitions: number,
  onRelayout?: (client: Queryable) => Promise<void>,
): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`platform_event_partition:${consumer}`]);
  const { rows } = await client.query<{ n: number; layouts: number[]; start: string | null }>(
    `SELECT count(*)::int AS n, array_agg(DISTINCT partitions) AS layouts,
            LEAST(min(seq), (SELECT seq FROM platform_event_cursor WHERE consumer = $1))::text AS start
       FROM platform_event_partition WHERE consumer = $1`,
    [consumer],
  );
  const current = rows[0]!;
  if (current.n === partitions && current.layouts.length === 1 && current.layouts[0] === partitions) return;
  const start =
    current.start ??
    (
      await client.query<{ seq: string | null }>(
        "SELECT seq::text AS seq FROM platform_event_cursor WHERE consumer = $1",
        [consumer],
      )
    ).rows[0]?.seq ??
    "0";
  await client.query("DELETE FROM platform_event_partition WHERE consumer = $1", [consumer]);
  await client.query(
    `INSERT INTO platform_event_partition (consumer, partition, partitions, seq)
     SELECT $1, p, $2, $3::int8 FROM generate_series(0, $2 - 1) AS p`,
    [consumer, partitions, start],
  );
  // The single cursor is replaced: left behind, it would hold back pruning for good.
  await client.query("DELETE FROM platform_event_cursor WHERE consumer = $1", [consumer]);
  await onRelayout?.(client);
}

/** A partition this worker holds, and its position when claimed. */
export interface HeldPartition {
  partition: number;
  /** the layout it belongs to (the consumer's partition count) */
  partitions: number;
  seq: string;
}

/**
 * One claim round of `holder` (in its own transaction): renews the leases it holds and its membership, then keeps its
 * fair share — the partitions divided by the live members (itself included), rounded up — releasing
 * what it holds past it (highest first, for a worker that just started; unless `releaseExtra` is false: a renewal
 * between passes gives nothing up under a pass in flight) and claiming free or lapsed partitions up to it. Answers
 * what it holds now.
 */
export async function claimPartitions(
  client: Queryable,
  consumer: string,
  holder: string,
  leaseMs: number,
  { releaseExtra = true }: { releaseExtra?: boolean } = {},
): Promise<HeldPartition[]> {
  // Its rows locked in partition order, as advancePartitions and holdsPartitions lock them: no cycle among the three.
  const { rows: mine } = await client.query<{ partition: number; partitions: number }>(
    `UPDATE platform_event_partition p SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
       FROM (SELECT partition FROM platform_event_partition
              WHERE consumer = $1 AND holder = $2 AND lease_until > now() ORDER BY partition FOR UPDATE) mine
      WHERE p.consumer = $1 AND p.partition = mine.partition AND p.holder = $2 AND p.lease_until > now()
      RETURNING p.partition, p.partitions`,
    [consumer, holder, leaseMs],
  );
  // This worker is a member (live, partitions or not) until its lease lapses; members long gone are forgotten.
  await client.query(
    `INSERT INTO platform_event_member (consumer, holder, lease_until)
     VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
     ON CONFLICT (consumer, holder) DO UPDATE SET lease_until = EXCLUDED.lease_until`,
    [consumer, holder, leaseMs],
  );
  await client.query(
    "DELETE FROM platform_event_member WHERE consumer = $1 AND lease_until < now() - interval '1 hour'",
    [consumer],
  );
  const { rows: layout } = await client.query<{ partitions: number; members: number }>(
    `SELECT (SELECT count(*) FROM platform_event_partition WHERE consumer = $1)::int AS partitions,
            (SELECT count(*) FROM platform_event_member WHERE consumer = $1 AND lease_until > now())::int AS members`,
    [consumer],
  );
  const share = Math.ceil(layout[0]!.partitions / Math.max(1, layout[0]!.members));
  if (mine.length > share && releaseExtra) {
    const extra = mine
      .map((m) => m.partition)
      .sort((a, b) => b - a)
      .slice(0, mine.length - share);
    await client.query(
      `UPDATE platform_event_partition SET holder = NULL, lease_until = NULL
        WHERE consumer = $1 AND holder = $2 AND partition = ANY($3::int[])`,
      [consumer, holder, extra],
    );
  } else if (mine.length < share) {
    await client.query(
      `UPDATE platform_event_partition p
          SET holder = $2, lease_until = now() + make_interval(secs => $3::float8 / 1000)
         FROM (SELECT partition FROM platform_event_partition
                WHERE consumer = $1 AND (holder IS NULL OR lease_until IS NULL OR lease_until <= now())
                ORDER BY partition LIMIT $4 FOR UPDATE SKIP LOCKED) free
        WHERE p.consumer = $1 AND p.partition = free.partition`,
      [consumer, holder, leaseMs, share - mine.length],
    );
  }
  const { rows } = await client.query<HeldPartition>(
    `SELECT partition, partitions, seq::text AS seq FROM platform_event_partition
      WHERE consumer = $1 AND holder = $2 AND lease_until > now() ORDER BY partition`,
    [consumer, holder],
  );
  return rows;
}

/** Gives up every partition `holder` holds, and its membership (a worker stopping): others take them at once. */
export async function releasePartitions(db: Queryable, consumer: string, holder: string): Promise<void> {
  await db.query(
    `WITH gone AS (DELETE FROM platform_event_member WHERE consumer = $1 AND holder = $2)
     UPDATE platform_event_partition SET holder = NULL, lease_until = NULL WHERE consumer = $1 AND holder = $2`,
    [consumer, holder],
  );
}

/** The last position sequenced (0: none): a partition at it has nothing to read. */
export async function streamEnd(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ end: string }>("SELECT COALESCE(max(seq), 0)::text AS end FROM platform_event");
  return rows[0]!.end;
}

/**
 * Which events a consumer of aspect changes reads: MetadataChangeLog_v1 events, less those of `skipAspects` and those
 * whose writer named `skipAppSource` (systemMetadata.properties.appSource). Filtered by PostgreSQL: the rows a
 * consumer would only drop (a run's thousand testResults versions per batch) are not sent, nor parsed.
 */
export interface AspectChangeFilter {
  skipAspects: readonly string[];
  skipAppSource: string;
}

/** A partition's events read by partitionsEventsAfter, and where it has read to. */
export interface PartitionRead {
  events: PlatformEventRow[];
  /** the position the partition has read to when it has handled `events` */
  upTo: string;
  /** it has events past upTo, to read at once */
  more: boolean;
}

/**
 * Up to `limit` sequenced events of one partition after position `after`, in order, looking at most `window`
 * positions ahead and no further than `end` (streamEnd's, read before); `upTo`: the position the partition has read
 * to when it has handled them (the last event's when the limit was reached, else the end of what it looked at), so a
 * partition with few events moves on with the stream rather than scanning the same stretch at each pass. `only`:
 * the events outside it are passed over (upTo moves past them all the same). `more`: the partition has events past
 * upTo (the limit was reached, or the window ended before `end`), to read at once.
 */
export async function partitionEventsAfter(
  db: Queryable,
  partition: { partition: number; partitions: number },
  after: string,
  limit: number,
  window: number,
  end: string,
  only?: AspectChangeFilter,
): Promise<PartitionRead> {
  const [read] = await partitionsEventsAfter(db, [{ ...partition, seq: after }], limit, window, end, only);
  return read!;
}

/**
 * partitionEventsAfter for several partitions of one worker, each from its own position (`seq`), in as few statements
 * as their positions allow: the partitions share one stretch of the stream, so each statement scans it once for all
 * of them (one scan a partition read it as many times over). Partitions whose positions are more than a window apart
 * are read apart, so no statement scans more than two windows. Answers in the order of `partitions`.
 */
export async function partitionsEventsAfter(
  db: Queryable,
  partitions: ReadonlyArray<{ partition: number; partitions: number; seq: string }>,
  limit: number,
  window: number,
  end: string,
  only?: AspectChangeFilter,
): Promise<PartitionRead[]> {
  const reads = partitions.map((p) => {
    const after = BigInt(p.seq);
    const upTo = after >= BigInt(end) ? after : min(after + BigInt(window), BigInt(end));
    return { ...p, after, upTo };
  });
  const answers = new Map<(typeof reads)[number], PartitionRead>();
  // Groups of one layout whose positions lie within a window of their first (in position order).
  const groups: Array<typeof reads> = [];
  for (const read of [...reads].sort((a, b) => (a.after < b.after ? -1 : a.after > b.after ? 1 : 0))) {
    if (read.upTo === read.after) {
      answers.set(read, { events: [], upTo: String(read.upTo), more: false });
      continue;
    }
    const group = groups.find((g) => g[0]!.partitions === read.partitions && read.after - g[0]!.after <= window);
    if (group) group.push(read);
    else groups.push([read]);
  }
  const capped = Math.min(limit, PLATFORM_EVENT_LIMITS.maxReadBatch);
  const filter = only
    ? `AND e.event_type = '${METADATA_CHANGE_LOG}' AND (e.aspect_name IS NULL OR e.aspect_name <> ALL($8::text[]))
       AND (e.payload #>> '{systemMetadata,properties,appSource}') IS DISTINCT FROM $9`
    : "";
  await Promise.all(
    groups.map(async (group) => {
      const { rows } = await db.query<PlatformEventRow & { partition: number }>(
        `WITH p AS (SELECT * FROM unnest($1::int[], $2::int8[], $3::int8[]) AS p(partition, after, up_to)),
              read AS (
                SELECT e.seq, e.event_type, e.entity_urn, e.entity_type, e.aspect_name, e.created_at,
                       e.payload #>> '{systemMetadata,properties,appSource}' AS app_source,
                       p.partition, row_number() OVER (PARTITION BY p.partition ORDER BY e.seq) AS n
                  FROM platform_event e
                  JOIN p ON p.partition = ${partitionOfSql("e.entity_urn", "$6")} AND e.seq > p.after AND e.seq <= p.up_to
                 WHERE e.seq > $4::int8 AND e.seq <= $5::int8 ${filter})
         SELECT partition, seq::text AS seq, event_type AS "eventType", entity_urn AS "entityUrn",
                entity_type AS "entityType", aspect_name AS "aspectName",
                (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt",
                app_source AS "appSource"
           FROM read WHERE n <= $7
          ORDER BY partition, read.seq -- the int8, not the answer's text (10 would sort before 9)`,
        [
          group.map((r) => r.partition),
          group.map((r) => String(r.after)),
          group.map((r) => String(r.upTo)),
          String(group[0]!.after),
          String(group.reduce((m, r) => (r.upTo > m ? r.upTo : m), 0n)),
          group[0]!.partitions,
          capped,
          ...(only ? [only.skipAspects, only.skipAppSource] : []),
        ],
      );
      for (const read of group) {
        const events = rows
          .filter((row) => row.partition === read.partition)
          .map(({ partition: _, ...event }) => event);
        answers.set(
          read,
          events.length === capped
            ? { events, upTo: events.at(-1)!.seq, more: true }
            : { events, upTo: String(read.upTo), more: read.upTo < BigInt(end) },
        );
      }
    }),
  );
  return reads.map((read) => answers.get(read)!);
}

/**
 * Moves a partition's position to `to`, if `holder` still holds it in the layout it read it in (renewing its lease);
 * false when it does not (its lease lapsed and another took it over, or the partitions were laid out again): the
 * caller's transaction must then not commit what it read.
 */
export async function advancePartition(
  client: Queryable,
  consumer: string,
  held: { partition: number; partitions: number },
  holder: string,
  to: string,
  leaseMs: number,
): Promise<boolean> {
  const moved = await advancePartitions(client, consumer, holder, [{ ...held, to }], leaseMs);
  return moved.has(held.partition);
}

/**
 * advancePartition for several partitions in one statement (those of a pass that read nothing to act on); answers
 * the partitions moved: the others `holder` no longer holds. Their rows are locked in partition order, as a claim's
 * renewal (claimPartitions) and holdsPartitions lock them, so none of them waits for another in a cycle.
 */
export async function advancePartitions(
  client: Queryable,
  consumer: string,
  holder: string,
  moves: ReadonlyArray<{ partition: number; partitions: number; to: string }>,
  leaseMs: number,
): Promise<Set<number>> {
  if (moves.length === 0) return new Set();
  const { rows } = await client.query<{ partition: number }>(
    `WITH m AS (SELECT * FROM unnest($3::int[], $4::int[], $5::int8[]) AS m(partition, partitions, seq)),
          mine AS (
            SELECT p.partition, m.seq FROM platform_event_partition p JOIN m USING (partition)
             WHERE p.consumer = $1 AND p.holder = $2 AND p.lease_until > now() AND p.partitions = m.partitions
             ORDER BY p.partition FOR UPDATE OF p)
     UPDATE platform_event_partition p
        SET seq = GREATEST(p.seq, mine.seq), updated_at = now(),
            lease_until = now() + make_interval(secs => $6::float8 / 1000)
       FROM mine
      WHERE p.consumer = $1 AND p.partition = mine.partition
     RETURNING p.partition`,
    [consumer, holder, moves.map((m) => m.partition), moves.map((m) => m.partitions), moves.map((m) => m.to), leaseMs],
  );
  return new Set(rows.map((row) => row.partition));
}

/**
 * Whether `holder` still holds every one of these partitions of the layout, under a live lease, locking their rows
 * (FOR SHARE) to the caller's commit: run last in a transaction that writes what its holder evaluated of them (a push
 * of results), so a partition taken over meanwhile makes it roll back rather than land after the new holder's newer
 * results, and no claim or release moves the partition until it commits. Take it after the transaction's other locks:
 * nothing that holds a partition's row waits for an aspect's lock, so there is no cycle.
 */
export async function holdsPartitions(
  client: Queryable,
  consumer: string,
  holder: string,
  held: { partitions: readonly number[]; layout: number },
): Promise<boolean> {
  const wanted = [...new Set(held.partitions)];
  const { rowCount } = await client.query(
    `SELECT partition FROM platform_event_partition
      WHERE consumer = $1 AND holder = $2 AND partition = ANY($3::int[]) AND partitions = $4 AND lease_until > now()
      ORDER BY partition FOR SHARE`,
    [consumer, holder, wanted, held.layout],
  );
  return rowCount === wanted.length;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
