import type { Queryable } from "../timeseries/timeseries.store";
import { partitionOfSql } from "./platform-event-partition.repository";

/**
 * Evaluation on change's carry-over (on_change_backlog; docs/evaluation-on-change.md "One owner's share"): the entities
 * whose evaluation for an owner did not finish within that owner's share of a pass, kept per partition and owner in the
 * order of their changes, so the pass moves on and that owner's later changes queue behind them. An entity is in an
 * owner's backlog at most once (with its latest change's position): it is evaluated in its state when taken.
 */

/** One carried-over entity. */
export interface BacklogEntry {
  ownerUrn: string;
  entityUrn: string;
  entityType: string;
  /** the position of its latest change carried over */
  seq: string;
}

/** At most this many entries move in one statement. */
const BACKLOG_BATCH = 10_000;

/** Adds entries to a partition's backlog (an entity already there takes the later position). */
export async function carryOver(client: Queryable, partition: number, entries: readonly BacklogEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += BACKLOG_BATCH) {
    const batch = entries.slice(i, i + BACKLOG_BATCH);
    await client.query(
      `INSERT INTO on_change_backlog (partition, owner_urn, entity_urn, entity_type, seq)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::int8[])
       ON CONFLICT (partition, owner_urn, entity_urn) DO UPDATE SET seq = GREATEST(on_change_backlog.seq, EXCLUDED.seq)`,
      [
        partition,
        batch.map((e) => e.ownerUrn),
        batch.map((e) => e.entityUrn),
        batch.map((e) => e.entityType),
        batch.map((e) => e.seq),
      ],
    );
  }
}

/** The owners with a backlog in this partition. */
export async function ownersWithBacklog(db: Queryable, partition: number): Promise<string[]> {
  const { rows } = await db.query<{ owner_urn: string }>(
    "SELECT DISTINCT owner_urn FROM on_change_backlog WHERE partition = $1",
    [partition],
  );
  return rows.map((r) => r.owner_urn);
}

/**
 * The oldest `limit` entries of an owner's backlogs in these partitions together, in the order of their changes, each
 * with its partition: one batch of an owner's work however many partitions its changes fell in. Each partition is read
 * through its (partition, owner, seq) index up to `limit`, so a long backlog is never sorted whole.
 */
export async function backlogOfOwner(
  db: Queryable,
  partitions: readonly number[],
  ownerUrn: string,
  limit: number,
): Promise<Array<BacklogEntry & { partition: number }>> {
  const { rows } = await db.query<BacklogEntry & { partition: number }>(
    // Ordered by the int8 position (as text, 10000001 would sort before 9999990), cast to text only to answer.
    `SELECT b.partition, b."ownerUrn", b."entityUrn", b."entityType", b.pos::text AS seq
       FROM unnest($1::int[]) AS p(partition) CROSS JOIN LATERAL (
       SELECT partition, owner_urn AS "ownerUrn", entity_urn AS "entityUrn", entity_type AS "entityType", seq AS pos
         FROM on_change_backlog WHERE partition = p.partition AND owner_urn = $2 ORDER BY seq LIMIT $3) b
      ORDER BY b.pos LIMIT $3`,
    [partitions, ownerUrn, Math.min(limit, BACKLOG_BATCH)],
  );
  return rows;
}

/**
 * Removes evaluated entries, each of its partition (in the transaction that pushed their results): each only if no later change was carried
 * over for it meanwhile (its position still at most the one evaluated), which stays to be evaluated again.
 */
export async function removeFromBacklog(
  client: Queryable,
  entries: ReadonlyArray<BacklogEntry & { partition: number }>,
): Promise<void> {
  for (let i = 0; i < entries.length; i += BACKLOG_BATCH) {
    const batch = entries.slice(i, i + BACKLOG_BATCH);
    await client.query(
      `DELETE FROM on_change_backlog b
        USING unnest($1::int[], $2::text[], $3::text[], $4::int8[]) AS d(partition, owner_urn, entity_urn, seq)
        WHERE b.partition = d.partition AND b.owner_urn = d.owner_urn AND b.entity_urn = d.entity_urn
          AND b.seq <= d.seq`,
      [
        batch.map((e) => e.partition),
        batch.map((e) => e.ownerUrn),
        batch.map((e) => e.entityUrn),
        batch.map((e) => e.seq),
      ],
    );
  }
}

/** After the partitions' layout changed: every entry moves to its entity's partition in the new layout. */
export async function repartitionBacklog(client: Queryable, partitions: number): Promise<void> {
  await client.query(
    `WITH moved AS (DELETE FROM on_change_backlog RETURNING *)
     INSERT INTO on_change_backlog (partition, owner_urn, entity_urn, entity_type, seq)
     SELECT ${partitionOfSql("entity_urn", "$1")}, owner_urn, entity_urn, max(entity_type), max(seq) FROM moved
      GROUP BY 1, owner_urn, entity_urn`,
    [partitions],
  );
}
