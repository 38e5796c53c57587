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
  // After the run's first batch the row exists: locking it is the one statement of a batch.
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

/** One entity of a batch, as the result history has it after the batch's push. */
export interface BatchEntityState {
  urn: string;
  /** its latest recorded state */
  passing: boolean;
  /** its state at the baseline; null: none recorded by then */
  previous: boolean | null;
  /** pass↔fail changes recorded after flapSince */
  changes: number;
  /** when its latest state was recorded (epoch ms) */
  latestAt: number;
}

/**
 * For each urn, the test's latest recorded result, the one at `baselineAt`, and how many changes came after
 * `flapSince` (the pair's history index, three short reads per entity). Urns without any recorded result are absent.
 */
export async function batchEntityStates(
  client: Pick<pg.ClientBase, "query">,
  testUrn: string,
  urns: readonly string[],
  baselineAt: Date,
  flapSince: Date,
): Promise<BatchEntityState[]> {
  const { rows } = await client.query<{
    urn: string;
    passing: boolean;
    previous: boolean | null;
    changes: number;
    latest_at: number;
  }>(
    // latest_at as epoch ms: pg reads a float8 with parseFloat, a timestamptz with a parser of dates in JavaScript.
    `SELECT u.urn, latest.passing, before.passing AS previous, round(extract(epoch FROM latest.at) * 1000)::float8 AS latest_at,
            (SELECT count(*)::int FROM test_result_transition c
              WHERE c.urn = u.urn AND c.test_urn = $1 AND c.at > $4 AND c.previous IS NOT NULL) AS changes
       FROM unnest($2::text[]) AS u(urn)
       JOIN LATERAL (
         SELECT t.passing, t.at FROM test_result_transition t WHERE t.urn = u.urn AND t.test_urn = $1
          ORDER BY t.at DESC, t.id DESC LIMIT 1
       ) latest ON true
       LEFT JOIN LATERAL (
         SELECT t.passing FROM test_result_transition t WHERE t.urn = u.urn AND t.test_urn = $1 AND t.at <= $3
          ORDER BY t.at DESC, t.id DESC LIMIT 1
       ) before ON true
      ORDER BY u.urn`,
    [testUrn, urns, baselineAt.toISOString(), flapSince.toISOString()],
  );
  return rows.map((r) => ({
    urn: r.urn,
    passing: r.passing,
    previous: r.previous,
    changes: r.changes,
    latestAt: r.latest_at,
  }));
}

/** Writes a run's counts and lists as they stand after a batch (the caller holds the row's lock: openRunDiff). */
export async function saveRunDiff(client: Pick<pg.ClientBase, "query">, row: RunDiffRow): Promise<void> {
  await client.query(
    `UPDATE test_run_diff SET last_batch_at = $2, evaluated = $3, newly_failing_count = $4, newly_passing_count = $5,
            flapping_count = $6, newly_failing = $7::jsonb, newly_passing = $8::jsonb, flapping = $9::jsonb
      WHERE run_id = $1`,
    [
      row.runId,
      row.lastBatchAt?.toISOString() ?? null,
      row.evaluated,
      row.newlyFailingCount,
      row.newlyPassingCount,
      row.flappingCount,
      JSON.stringify(row.newlyFailing),
      JSON.stringify(row.newlyPassing),
      JSON.stringify(row.flapping),
    ],
  );
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
