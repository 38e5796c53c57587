import type pg from "pg";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The test_run_diff table: per test run (a runTest task that pushes), the entities it found newly failing, newly
 * passing and flapping. Written by the evaluation worker in each batch's transaction (after the push recorded its
 * transitions), pruned with the result history, read by the gateway's testRunDiff.
 */

/** An entity in a run's newly failing or newly passing list. */
export interface RunDiffChange {
  urn: string;
  /** its state at the run's baseline: null when it had no result then */
  previous: boolean | null;
}

/** An entity in a run's flapping list. */
export interface RunDiffFlap {
  urn: string;
  /** its state after this run */
  passing: boolean;
  /** pass↔fail changes since the run's flapSince */
  changes: number;
}

export interface RunDiffRow {
  runId: string;
  testUrn: string;
  previousRunId: string | null;
  startedAt: Date;
  baselineAt: Date;
  flapSince: Date;
  flapChanges: number;
  flapRuns: number;
  lastBatchAt: Date | null;
  evaluated: number;
  newlyFailingCount: number;
  newlyPassingCount: number;
  flappingCount: number;
  newlyFailing: RunDiffChange[];
  newlyPassing: RunDiffChange[];
  flapping: RunDiffFlap[];
}

const COLUMNS = `run_id AS "runId", test_urn AS "testUrn", previous_run_id AS "previousRunId", started_at AS "startedAt",
  baseline_at AS "baselineAt", flap_since AS "flapSince", flap_changes AS "flapChanges", flap_runs AS "flapRuns",
  last_batch_at AS "lastBatchAt", evaluated, newly_failing_count AS "newlyFailingCount",
  newly_passing_count AS "newlyPassingCount", flapping_count AS "flappingCount", newly_failing AS "newlyFailing",
  newly_passing AS "newlyPassing", flapping`;

/**
 * The run's row, created at its first batch and locked until the caller's transaction ends. Creating it fixes what
 * the run is compared with: its baseline is the last batch of the test's latest earlier run (or the run's own start
 * when it has none), its flap window starts at the start of the oldest of the last `flapRuns` runs counting this one.
 * The test's runs beyond the newest `maxRuns` are deleted in the same statement's transaction.
 */
export async function openRunDiff(
  client: Pick<pg.ClientBase, "query">,
  run: { runId: string; testUrn: string; at: Date; flapChanges: number; flapRuns: number; maxRuns: number },
): Promise<RunDiffRow> {
  // A row that exists (created by a caller that did not know it was there) is answered as it stands, locked.
  const locked = () =>
    client.query<RunDiffRow>(`SELECT ${COLUMNS} FROM test_run_diff WHERE run_id = $1 FOR UPDATE`, [run.runId]);
  const existing = (await locked()).rows[0];
  if (existing) return existing;
  const { rowCount } = await client.query(
    `WITH earlier AS (
         SELECT run_id, started_at, COALESCE(last_batch_at, started_at) AS ended_at FROM test_run_diff
          WHERE test_urn = $2 AND run_id <> $1
          ORDER BY started_at DESC, run_id DESC LIMIT GREATEST($5::int - 1, 1)
       )
       INSERT INTO test_run_diff (run_id, test_urn, previous_run_id, started_at, baseline_at, flap_since, flap_changes, flap_runs)
       SELECT $1, $2,
              (SELECT run_id FROM earlier ORDER BY started_at DESC, run_id DESC LIMIT 1),
              $3::timestamptz,
              LEAST($3::timestamptz, COALESCE((SELECT ended_at FROM earlier ORDER BY started_at DESC, run_id DESC LIMIT 1), $3::timestamptz)),
              CASE WHEN $5::int <= 1 THEN $3::timestamptz
                   ELSE LEAST($3::timestamptz, COALESCE((SELECT min(started_at) FROM earlier), $3::timestamptz)) END,
              $4, $5
       ON CONFLICT (run_id) DO NOTHING`,
    [run.runId, run.testUrn, run.at.toISOString(), run.flapChanges, run.flapRuns],
  );
  if (rowCount === 1) {
    await client.query(
      `DELETE FROM test_run_diff WHERE run_id IN (
         SELECT run_id FROM test_run_diff WHERE test_urn = $1 ORDER BY started_at DESC, run_id DESC OFFSET $2)`,
      [run.testUrn, run.maxRuns],
    );
  }
  return (await locked()).rows[0]!;
}

/** What a run diff keeps of each list at most: its first entities in urn order, and bytes of their JSON. */
export interface RunDiffListLimits {
  entities: number;
  bytes: number;
}

/** Which of the batch's states each list takes (`s` a state, `r` the run). */
const LISTED = {
  newly_failing: "s.passing IS DISTINCT FROM s.previous AND NOT s.passing",
  newly_passing: "s.passing IS DISTINCT FROM s.previous AND s.passing",
  flapping: "s.changes > r.flap_changes",
} as const;

/**
 * One of the batch's lists: its entries in urn order, each with its running number and running bytes (each entry's
 * text and the ", " before it, as PostgreSQL writes a jsonb array); none once the stored list has ended, full or cut
 * short of an entry (it keeps fewer than it counts: the run's first batches end it, its later ones build no entry).
 */
const listOf = (list: keyof typeof LISTED, entry: string) => `
  SELECT e.entry, row_number() OVER w AS n, sum(octet_length(e.entry::text) + 2) OVER w AS bytes
    FROM (SELECT s.urn, ${entry} AS entry FROM states s, run r
           WHERE ${LISTED[list]} AND r.${list}_kept = r.${list}_counted AND r.${list}_kept < $4::int) e
  WINDOW w AS (ORDER BY e.urn)`;

/** How many of the batch's states a list counts: all it takes, kept in the list or not. */
const countOf = (list: keyof typeof LISTED) => `(SELECT count(*)::int FROM states s, run r WHERE ${LISTED[list]})`;

/**
 * A stored list grown by the batch's entries while they fit: up to $4 entries and $5 bytes of JSON in all, the list's
 * text as PostgreSQL writes jsonb (a space after each comma and colon: the compact JSON the gateway reads is
 * smaller). The first entry that does not fit ends it, in this batch and the run's later ones (listOf): the list is
 * the run's first entities in urn order, never a later one in place of an earlier. Its count is kept whole apart. An
 * empty list's text is "[]", and its first entry has no ", " before it.
 */
const appended = (list: string) =>
  `d.${list} || COALESCE((SELECT jsonb_agg(l.entry ORDER BY l.n) FROM ${list} l
      WHERE l.n <= $4::int - jsonb_array_length(d.${list})
        AND octet_length(d.${list}::text) + l.bytes
            - CASE WHEN jsonb_array_length(d.${list}) = 0 THEN 2 ELSE 0 END <= $5::int), '[]'::jsonb)`;

/**
 * The run diff after a batch, in one statement: the run's row locked until the transaction ends (as openRunDiff
 * locks it; two attempts at one batch already queue on its entities' testResults locks, held since before its read,
 * so none waits here with a snapshot of the history older than the other's commit), each decided entity's state read
 * from the result history (its latest result, the one at the run's baseline, and its pass/fail changes since the flap
 * window's start, three short reads of the pair's index), and the counts and lists grown by them. An entity without a
 * recorded result is not counted. The last batch's time is the latest of the batch's evaluation and its results' (a
 * pair's times never go backwards).
 */
const RECORD_RUN_DIFF_BATCH = `
  WITH run AS (
      SELECT run_id, test_urn, baseline_at, flap_since, flap_changes, last_batch_at,
             jsonb_array_length(newly_failing) AS newly_failing_kept, newly_failing_count AS newly_failing_counted,
             jsonb_array_length(newly_passing) AS newly_passing_kept, newly_passing_count AS newly_passing_counted,
             jsonb_array_length(flapping) AS flapping_kept, flapping_count AS flapping_counted
        FROM test_run_diff WHERE run_id = $1 FOR UPDATE
    ), states AS (
      SELECT u.urn, latest.passing, before.passing AS previous, latest.at AS latest_at,
             (SELECT count(*)::int FROM test_result_transition c
               WHERE c.urn = u.urn AND c.test_urn = r.test_urn AND c.at > r.flap_since AND c.previous IS NOT NULL) AS changes
        FROM run r
        CROSS JOIN unnest($2::text[]) AS u(urn)
        JOIN LATERAL (
          SELECT t.passing, t.at FROM test_result_transition t WHERE t.urn = u.urn AND t.test_urn = r.test_urn
           ORDER BY t.at DESC, t.id DESC LIMIT 1
        ) latest ON true
        LEFT JOIN LATERAL (
          SELECT t.passing FROM test_result_transition t
           WHERE t.urn = u.urn AND t.test_urn = r.test_urn AND t.at <= r.baseline_at
           ORDER BY t.at DESC, t.id DESC LIMIT 1
        ) before ON true
    ), newly_failing AS (${listOf("newly_failing", "jsonb_build_object('urn', s.urn, 'previous', s.previous)")}
    ), newly_passing AS (${listOf("newly_passing", "jsonb_build_object('urn', s.urn, 'previous', s.previous)")}
    ), flapping AS (${listOf(
      "flapping",
      "jsonb_build_object('urn', s.urn, 'passing', s.passing, 'changes', s.changes)",
    )}
    )
  UPDATE test_run_diff d
     SET last_batch_at = GREATEST(r.last_batch_at, to_timestamp($3::int8 / 1000.0), (SELECT max(latest_at) FROM states)),
         evaluated = d.evaluated + (SELECT count(*)::int FROM states),
         newly_failing_count = d.newly_failing_count + ${countOf("newly_failing")},
         newly_passing_count = d.newly_passing_count + ${countOf("newly_passing")},
         flapping_count = d.flapping_count + ${countOf("flapping")},
         newly_failing = ${appended("newly_failing")},
         newly_passing = ${appended("newly_passing")},
         flapping = ${appended("flapping")}
    FROM run r
   WHERE d.run_id = r.run_id`;

/**
 * Adds a batch to its run's diff (RECORD_RUN_DIFF_BATCH): `urns` are the entities the run's test passed or failed,
 * after the batch's push recorded their transitions. One statement, no rows back: where reading each entity's states
 * into the worker and writing the lists back took three and a thousand rows. Answers false when the run has no row
 * yet (openRunDiff creates it).
 */
export async function recordRunDiffBatch(
  client: Pick<pg.ClientBase, "query">,
  batch: { runId: string; urns: readonly string[]; evaluatedAt: number; limits: RunDiffListLimits },
): Promise<boolean> {
  const { rowCount } = await client.query(RECORD_RUN_DIFF_BATCH, [
    batch.runId,
    batch.urns,
    batch.evaluatedAt,
    batch.limits.entities,
    batch.limits.bytes,
  ]);
  return rowCount === 1;
}

/** A test's run diff: the one of `runId`, or its latest run's when null. */
export async function findRunDiff(db: Queryable, testUrn: string, runId: string | null): Promise<RunDiffRow | null> {
  const { rows } =
    runId === null
      ? await db.query<RunDiffRow>(
          `SELECT ${COLUMNS} FROM test_run_diff WHERE test_urn = $1 ORDER BY started_at DESC, run_id DESC LIMIT 1`,
          [testUrn],
        )
      : await db.query<RunDiffRow>(`SELECT ${COLUMNS} FROM test_run_diff WHERE test_urn = $1 AND run_id = $2`, [
          testUrn,
          runId,
        ]);
  return rows[0] ?? null;
}

/** Deletes up to `limit` run diffs that started more than `retentionDays` ago (SKIP LOCKED); answers how many went. */
export async function pruneRunDiffs(db: Queryable, retentionDays: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM test_run_diff WHERE run_id IN (
       SELECT run_id FROM test_run_diff WHERE started_at < now() - make_interval(days => $1)
        LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [retentionDays, limit],
  );
  return rowCount ?? 0;
}
