import { METADATA_CHANGE_LOG } from "@mdp/core";
import type { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The platform-event outbox (platform_event, platform_event_cursor; docs/evaluation-on-change.md): every change worth
 * telling others about is an event row written in the change's own transaction, so an event exists exactly when its
 * change committed, and each consumer keeps its own durable cursor. Events are DataHub's PlatformEvent kinds:
 * `MetadataChangeLog_v1` (DataHub Actions' event of an aspect written), written here for AspectRepository.upsert's
 * aspect versions and a test's definition created, changed or deleted; and `EntityChangeEvent_v1` (tokens, tasks,
 * test results, schedules), whose writers are entity-change-events.ts (docs/events.md).
 *
 * Ordering: ids come from a sequence at insertion, so a transaction may commit an id lower than one another has
 * committed already, and a cursor on ids would skip it. Consumers read in `seq` order instead: the sequencer
 * (sequencePlatformEvents, one transaction at a time in the cluster) gives each committed event the next position,
 * and an event committed later is sequenced later. Rows of a transaction still running are invisible to it, so no
 * consumer ever reads an event (nor the entity it names) half written.
 */
/** Bounds of what one event stores (docs/limits.md): urns are bounded by the URN limit, names by the registry. */
export const PLATFORM_EVENT_LIMITS = {
  /** events one consumer reads per pass */
  maxReadBatch: 10_000,
  /** rows one prune statement deletes */
  pruneBatch: 10_000,
} as const;

/** One event as a consumer reads it. */
export interface PlatformEventRow {
  /** its position in the stream (commit order): the cursor */
  seq: string;
  eventType: string;
  entityUrn: string;
  entityType: string;
  aspectName: string | null;
  /** epoch ms */
  createdAt: number;
  /** systemMetadata.properties.appSource: where the change came from, when its writer said (TEST_ACTIONS_APP_SOURCE) */
  appSource: string | null;
}

/** The appSource of aspects written by metadata tests' actions: evaluation on change does not re-trigger on them. */
export const TEST_ACTIONS_APP_SOURCE = "metadataTestActions";

/**
 * The SQL that writes one MetadataChangeLog_v1 event per row of `source` (a relation with urn, entity_type,
 * aspect_name, version, created_by, created_at): DataHub's MCL fields an outside reader needs, the aspect's value
 * left out (bounded: a reader fetches what it needs). Used by AspectRepository.upsert in the same statement as its
 * insert.
 */
export function metadataChangeLogInsert(source: string, appSource: string): string {
  return `INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload, created_at)
          SELECT '${METADATA_CHANGE_LOG}', s.urn, s.entity_type, s.aspect_name,
                 jsonb_build_object('entityUrn', s.urn, 'entityType', s.entity_type, 'aspectName', s.aspect_name,
                                    'changeType', 'UPSERT', 'version', s.version,
                                    'created', jsonb_build_object('time', (extract(epoch FROM s.created_at) * 1000)::int8,
                                                                  'actor', s.created_by))
                   || CASE WHEN ${appSource} IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('systemMetadata',
                        jsonb_build_object('properties', jsonb_build_object('appSource', ${appSource}))) END,
                 s.created_at
            FROM ${source} s`;
}

/** A metadata test created, changed or deleted (its testInfo, as DataHub names a test's definition aspect). */
export async function insertTestChangeEvent(
  tx: Pick<Prisma.TransactionClient, "$executeRaw">,
  change: { testUrn: string; changeType: "UPSERT" | "DELETE"; actorUrn: string },
): Promise<void> {
  const payload = JSON.stringify({
    entityUrn: change.testUrn,
    entityType: "test",
    aspectName: "testInfo",
    changeType: change.changeType,
    created: { time: Date.now(), actor: change.actorUrn },
  });
  await tx.$executeRaw`
    INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload)
    VALUES (${METADATA_CHANGE_LOG}, ${change.testUrn}, 'test', 'testInfo', ${payload}::jsonb)`;
}

/**
 * Gives up to `limit` committed events without a position the next ones, in insertion order; answers how many. One
 * sequencer at a time in the cluster (an advisory lock held to its commit), so positions become visible in order: a
 * consumer that has read position n never later finds a lower one. Run in a transaction of its own, committed before
 * consumers read.
 */
export async function sequencePlatformEvents(client: Queryable, limit: number): Promise<number> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext('platform_event_sequencer'))");
  const { rowCount } = await client.query(
    `UPDATE platform_event e SET seq = nextval('platform_event_position')
       FROM (SELECT id FROM platform_event WHERE seq IS NULL ORDER BY id LIMIT $1) n
      WHERE e.id = n.id`,
    [Math.min(limit, PLATFORM_EVENT_LIMITS.maxReadBatch)],
  );
  return rowCount ?? 0;
}

/**
 * Locks the consumer's cursor for the rest of the caller's transaction and answers its position (created at the
 * start, 0, when new); null when another transaction holds it (another worker is consuming: SKIP LOCKED, nobody
 * waits).
 */
export async function lockEventCursor(client: Queryable, consumer: string): Promise<string | null> {
  await client.query("INSERT INTO platform_event_cursor (consumer) VALUES ($1) ON CONFLICT (consumer) DO NOTHING", [
    consumer,
  ]);
  const { rows } = await client.query<{ seq: string }>(
    "SELECT seq::text AS seq FROM platform_event_cursor WHERE consumer = $1 FOR UPDATE SKIP LOCKED",
    [consumer],
  );
  return rows[0]?.seq ?? null;
}

/**
 * Up to `limit` sequenced events after position `after`, in order: of the int8 column, qualified (the answer's `seq` is
 * its text, and `ORDER BY seq` would sort by that: 10 before 9, skipping past what it passed over).
 */
export async function eventsAfter(db: Queryable, after: string, limit: number): Promise<PlatformEventRow[]> {
  const { rows } = await db.query<PlatformEventRow>(
    `SELECT seq::text AS seq, event_type AS "eventType", entity_urn AS "entityUrn", entity_type AS "entityType",
            aspect_name AS "aspectName", (extract(epoch FROM created_at) * 1000)::float8 AS "createdAt",
            payload #>> '{systemMetadata,properties,appSource}' AS "appSource"
       FROM platform_event
      WHERE seq > $1::int8
      ORDER BY platform_event.seq
      LIMIT $2`,
    [after, Math.min(limit, PLATFORM_EVENT_LIMITS.maxReadBatch)],
  );
  return rows;
}

/** Moves the consumer's cursor (locked by lockEventCursor in the same transaction) to position `to`. */
export async function advanceEventCursor(client: Queryable, consumer: string, to: string): Promise<void> {
  await client.query("UPDATE platform_event_cursor SET seq = $2::int8, updated_at = now() WHERE consumer = $1", [
    consumer,
    to,
  ]);
}

/** How many events the consumer has yet to read (sequenced or not), and how old the oldest is (ms; 0: none). */
export async function eventLag(db: Queryable, consumer: string): Promise<{ events: number; oldestMs: number }> {
  const { rows } = await db.query<{ events: number; oldest_ms: number | null }>(
    `SELECT count(*)::int AS events, (extract(epoch FROM now() - min(e.created_at)) * 1000)::float8 AS oldest_ms
       FROM platform_event e
      WHERE e.seq IS NULL
         OR e.seq > COALESCE((SELECT seq FROM platform_event_cursor WHERE consumer = $1), 0)`,
    [consumer],
  );
  return { events: rows[0]?.events ?? 0, oldestMs: Math.max(0, rows[0]?.oldest_ms ?? 0) };
}

/**
 * Deletes up to `limit` events older than `retentionDays` that every consumer has read (at or behind the slowest
 * cursor or partition): an event a consumer has yet to read, or not yet sequenced, is kept however old. Answers how many went.
 */
export async function prunePlatformEvents(db: Queryable, retentionDays: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM platform_event WHERE id IN (
       SELECT e.id FROM platform_event e
        WHERE e.created_at < now() - make_interval(days => $1)
          AND e.seq <= COALESCE(LEAST((SELECT min(seq) FROM platform_event_cursor),
                                      (SELECT min(seq) FROM platform_event_partition)), 0)
        LIMIT $2
        FOR UPDATE SKIP LOCKED)`,
    [retentionDays, Math.min(limit, PLATFORM_EVENT_LIMITS.pruneBatch)],
  );
  return rowCount ?? 0;
}
