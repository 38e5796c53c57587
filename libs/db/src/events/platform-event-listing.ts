import { ENTITY_CHANGE_EVENT, METADATA_CHANGE_LOG } from "@mdp/core";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * listPlatformEvents' statement (docs/events.md): the sequenced platform events after a position, for one reader.
 * Bounded work: one call reads at most `scan` rows of the stream (in seq order, through its unique index), and leaves
 * out in SQL what the reader cannot read at all (`ReaderScope`, derived from @mdp/core canReadPlatformEvent by the
 * gateway, which still checks each event it answers). `scannedTo` is the last position read, so a caller whose window
 * held nothing it may read still moves on.
 */

/** What a reader may read of the stream by privilege alone; beyond it, events whose subject it is. */
export interface ReaderScope {
  urn: string;
  /** MetadataChangeLog_v1 of a test's definition / of any other entity */
  mclTests: boolean;
  mclEntities: boolean;
  /** EntityChangeEvent_v1 categories readable whatever the event is about (SCHEDULE apart) */
  categories: readonly string[];
  /** SCHEDULE events of tests / of other work (retention policies) */
  scheduleTests: boolean;
  scheduleOther: boolean;
  /** EntityChangeEvent_v1 categories whose events about the reader itself it may read (its own tokens, tasks, …) */
  subjectCategories: readonly string[];
}

export interface PlatformEventFilter {
  eventTypes?: readonly string[];
  categories?: readonly string[];
  entityUrn?: string;
}

/** One listed event. */
export interface ListedPlatformEvent {
  seq: string;
  eventType: string;
  category: string | null;
  operation: string | null;
  entityType: string;
  entityUrn: string;
  /** epoch ms */
  createdAt: number;
  subjectActor: string | null;
  payload: Record<string, unknown>;
  /** the payload's JSON size, for the answer's byte budget */
  payloadBytes: number;
}

export const PLATFORM_EVENT_LISTING = {
  /** rows of the stream one call reads at most, readable or not */
  maxScan: 10_000,
} as const;

/**
 * Up to `count` events after `since` that the scope and filter admit, in seq order, reading at most `scan` rows;
 * `scannedTo`: the last position read (null: nothing after `since`); `oldest`: the oldest sequenced position kept
 * (null: none).
 */
export async function listPlatformEventRows(
  db: Queryable,
  query: { since: string; count: number; scan: number; scope: ReaderScope; filter: PlatformEventFilter },
): Promise<{ events: ListedPlatformEvent[]; scannedTo: string | null; oldest: string | null }> {
  const { scope, filter } = query;
  const { rows } = await db.query<
    Omit<ListedPlatformEvent, "payload"> & { payload: Record<string, unknown> | null } & {
      scannedTo: string | null;
      oldest: string | null;
    }
  >(
    `WITH w AS (
       -- the window, without payloads: only the events answered are read whole (below)
       SELECT seq, event_type, category, entity_type, entity_urn, subject_actor, created_at
         FROM platform_event WHERE seq > $1::int8 ORDER BY seq LIMIT $2
     ), m AS (
       SELECT * FROM w
        WHERE ((event_type = '${METADATA_CHANGE_LOG}'
                AND CASE WHEN entity_type = 'test' THEN $4::boolean ELSE $5::boolean END)
            OR (event_type = '${ENTITY_CHANGE_EVENT}'
                AND ((subject_actor = $3 AND category = ANY($13::text[])) OR category = ANY($6::text[])
                     OR (category = 'SCHEDULE' AND CASE WHEN entity_type = 'test' THEN $7::boolean ELSE $8::boolean END))))
          AND ($9::text[] IS NULL OR event_type = ANY($9::text[]))
          AND ($10::text[] IS NULL OR category = ANY($10::text[]))
          AND ($11::text IS NULL OR entity_urn = $11)
        ORDER BY seq LIMIT $12
     )
     SELECT (SELECT max(seq)::text FROM w) AS "scannedTo",
            (SELECT min(seq)::text FROM platform_event WHERE seq IS NOT NULL) AS oldest,
            m.seq::text AS seq, m.event_type AS "eventType", m.category, e.payload ->> 'operation' AS operation,
            m.entity_type AS "entityType", m.entity_urn AS "entityUrn", m.subject_actor AS "subjectActor",
            (extract(epoch FROM m.created_at) * 1000)::float8 AS "createdAt", e.payload,
            octet_length(e.payload::text) AS "payloadBytes"
       FROM (SELECT 1) one LEFT JOIN m ON true LEFT JOIN platform_event e ON e.seq = m.seq
      ORDER BY m.seq`,
    [
      query.since,
      Math.min(query.scan, PLATFORM_EVENT_LISTING.maxScan),
      scope.urn,
      scope.mclTests,
      scope.mclEntities,
      [...scope.categories],
      scope.scheduleTests,
      scope.scheduleOther,
      filter.eventTypes ? [...filter.eventTypes] : null,
      filter.categories ? [...filter.categories] : null,
      filter.entityUrn ?? null,
      query.count,
      [...scope.subjectCategories],
    ],
  );
  const first = rows[0];
  return {
    scannedTo: first?.scannedTo ?? null,
    oldest: first?.oldest ?? null,
    events: rows
      .filter((r) => r.seq !== null)
      .map(({ scannedTo: _s, oldest: _o, ...event }) => ({
        ...event,
        payload: event.payload ?? {},
        payloadBytes: Number(event.payloadBytes),
      })),
  };
}
