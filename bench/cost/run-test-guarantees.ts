/**
 * What runTest with push's batch transaction writes beside its testResults versions, bare, for run-test-floor.ts with
 * GUARANTEES=1 ("the floor with its guarantees"): in the batch's transaction, each version's MetadataChangeLog_v1
 * outbox row in the statement that writes the versions (as the product's upsert does), the results' history with its
 * flip events and per-pair trim in one statement, and the run diff's row in one statement (its lock, the batch's
 * states read from the history, the counts and bounded lists); then, committed, the outbox sequencer's numbering of
 * what the batch wrote, in a transaction of its own, once per batch. No advisory lock, merge with stored results,
 * test-selection read, action or task row: those stay the product's distance.
 */
import type pg from "pg";
import { ENTITY_CHANGE_EVENT, METADATA_CHANGE_LOG, SYSTEM_ACTOR_URN } from "@mdp/core";
import { recordRunDiffBatch } from "@mdp/db";

/**
 * `insert` (an INSERT INTO aspect, its last parameter $5) with each written version's MetadataChangeLog_v1 event, in
 * one statement: AspectRepository.upsert's insertVersions with libs/db's metadataChangeLogInsert (events/
 * platform-event.repository.ts), a copy; keep them in step. $5: the appSource (null for a push, as the product's).
 */
export const withChangeLogEvents = (insert: string): string => `
  WITH written AS (${insert}
    RETURNING urn, aspect_name, entity_type, version, created_by, created_at)
  INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload, created_at)
  SELECT '${METADATA_CHANGE_LOG}', s.urn, s.entity_type, s.aspect_name,
         jsonb_build_object('entityUrn', s.urn, 'entityType', s.entity_type, 'aspectName', s.aspect_name,
                            'changeType', 'UPSERT', 'version', s.version,
                            'created', jsonb_build_object('time', (extract(epoch FROM s.created_at) * 1000)::int8,
                                                          'actor', s.created_by))
           || CASE WHEN $5::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('systemMetadata',
                jsonb_build_object('properties', jsonb_build_object('appSource', $5::text))) END,
         s.created_at
    FROM written s`;

/**
 * The results' history: libs/db's insertTransitions with testResultFlipEventInsert (metadata-tests/
 * test-results.repository.ts, events/entity-change-events.ts), a copy; keep them in step.
 */
const HISTORY = `
  WITH input AS (
      SELECT urn, test_urn, passing, to_timestamp(at_ms / 1000.0) AS at
        FROM unnest($1::text[], $2::text[], $3::boolean[], $4::int8[]) AS i(urn, test_urn, passing, at_ms)
    ), compared AS (
      SELECT i.urn, i.test_urn, i.passing, i.at, last.passing AS previous, last.at AS previous_at
        FROM input i
        LEFT JOIN LATERAL (
          SELECT t.passing, t.at FROM test_result_transition t
           WHERE t.urn = i.urn AND t.test_urn = i.test_urn
           ORDER BY t.at DESC, t.id DESC LIMIT 1
        ) last ON true
    ), inserted AS (
      INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
      SELECT urn, test_urn, passing, previous, GREATEST(at, previous_at) FROM compared
       WHERE previous IS DISTINCT FROM passing
      RETURNING urn, test_urn, passing, previous, at
    ), flipped AS (
      INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
      SELECT '${ENTITY_CHANGE_EVENT}', s.urn, split_part(s.urn, ':', 3), 'TEST_RESULT', NULL,
             jsonb_build_object('entityType', split_part(s.urn, ':', 3), 'entityUrn', s.urn,
               'category', 'TEST_RESULT', 'operation', CASE WHEN s.passing THEN 'PASS' ELSE 'FAIL' END,
               'modifier', s.test_urn,
               'parameters', jsonb_build_object('previous', CASE WHEN s.previous THEN 'PASS' ELSE 'FAIL' END),
               'auditStamp', jsonb_build_object('time', round(extract(epoch FROM s.at) * 1000)::int8,
                                                'actor', '${SYSTEM_ACTOR_URN.replaceAll("'", "''")}'),
               'version', 0)
        FROM inserted s
       WHERE s.previous IS NOT NULL AND s.previous IS DISTINCT FROM s.passing
    ), trimmed AS (
      DELETE FROM test_result_transition t
       USING (
         SELECT old.id FROM compared c
         CROSS JOIN LATERAL (
           SELECT x.id FROM test_result_transition x
            WHERE x.urn = c.urn AND x.test_urn = c.test_urn
            ORDER BY x.at DESC, x.id DESC OFFSET $5::int - 1
         ) old
          WHERE c.previous IS NOT NULL AND c.previous IS DISTINCT FROM c.passing
       ) d
      WHERE t.id = d.id
    )
    SELECT count(*)::int AS written FROM inserted`;

/** services/evaluation-worker's DEFAULT_MAX_TRANSITIONS_PER_PAIR and RUN_DIFF_LIST_LIMITS, DEFAULT_RUN_DIFF_SETTINGS */
const MAX_PER_PAIR = 1_000;
const LIST_ENTITIES = 100;
const LIST_BYTES = 64 * 1024;
const FLAP = { changes: 2, runs: 5 };

/** A run's row as openRunDiff creates it for a test without earlier runs: its baseline and flap window its start. */
const OPEN_RUN_DIFF = `
  INSERT INTO test_run_diff (run_id, test_urn, previous_run_id, started_at, baseline_at, flap_since, flap_changes, flap_runs)
  VALUES ($1, $2, NULL, $3::timestamptz, $3::timestamptz, $3::timestamptz, $4, $5)`;

/** libs/db's sequencePlatformEvents (events/platform-event.repository.ts), a copy; keep them in step. */
const SEQUENCER_LOCK = "SELECT pg_advisory_xact_lock(hashtext('platform_event_sequencer'))";
const SEQUENCE = `
  UPDATE platform_event e SET seq = nextval('platform_event_position')
    FROM (SELECT id FROM platform_event WHERE seq IS NULL ORDER BY id LIMIT $1) n
   WHERE e.id = n.id`;
/** PLATFORM_EVENT_LIMITS.maxReadBatch: the most one numbering takes, more than a batch writes */
const SEQUENCE_LIMIT = 10_000;

/** One pass's run: its own run diff row and its own test urn in the history, so every pair's result is its first. */
export interface GuaranteedRun {
  runId: string;
  /** the history's test urn: the pass's own, as the product's first push of a test writes a first row per pair */
  historyTestUrn: string;
}

/** Opens the pass's run diff row (the product's first batch creates it). */
export async function openRun(client: pg.ClientBase, run: GuaranteedRun, at: Date): Promise<void> {
  await client.query(OPEN_RUN_DIFF, [run.runId, run.historyTestUrn, at.toISOString(), FLAP.changes, FLAP.runs]);
}

/** The batch's history and run diff, in the caller's transaction after its versions and their events. */
export async function writeHistoryAndRunDiff(
  client: pg.ClientBase,
  run: GuaranteedRun,
  results: { urns: string[]; passing: boolean[] },
  at: number,
): Promise<void> {
  await client.query(HISTORY, [
    results.urns,
    results.urns.map(() => run.historyTestUrn),
    results.passing,
    results.urns.map(() => at),
    MAX_PER_PAIR,
  ]);
  // the product's own statement: one statement is already the plain way
  await recordRunDiffBatch(client, {
    runId: run.runId,
    urns: results.urns,
    evaluatedAt: at,
    limits: { entities: LIST_ENTITIES, bytes: LIST_BYTES },
  });
}

/** The outbox sequencer's numbering, in a transaction of its own after the batch's committed. */
export async function sequenceEvents(client: pg.ClientBase): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query(SEQUENCER_LOCK);
    await client.query(SEQUENCE, [SEQUENCE_LIMIT]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}
