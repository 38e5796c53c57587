import type { Queryable } from "../timeseries/timeseries.store";

/** A test's run that completed and pushed its results: what Test.batchRunEvents answers. */
export interface TestRunEventRow {
  taskId: string;
  /** when it completed (epoch ms) */
  finishedAt: number;
  /** the task's final progress counts: entities that passed and failed the test */
  passing: number;
  failing: number;
}

/**
 * Test.batchRunEvents (DataHub's BatchTestRunEvent): the test's completed runs with push (runTest and scheduled
 * firings are both runTest tasks of EVALUATE_TESTS), newest first, that finished in [from, to), at most `limit`. The
 * finished rows are read newest first by the (state, created_at) index, from `to` back to `from` (a run is created
 * before it finishes), so the window given bounds what is read.
 */
export async function testRunEvents(
  db: Queryable,
  testUrn: string,
  window: { from: number; to: number; limit: number },
): Promise<TestRunEventRow[]> {
  const { rows } = await db.query<{ id: string; finished_at: Date; passing: number | null; failing: number | null }>(
    `SELECT id, finished_at, (progress->>'passing')::int AS passing, (progress->>'failing')::int AS failing
       FROM task
      WHERE state = 'completed' AND created_at < $3 AND type = 'EVALUATE_TESTS'
        AND request->>'kind' = 'runTest' AND request->>'testUrn' = $1 AND request->>'push' = 'true'
        AND finished_at >= $2 AND finished_at < $3
      ORDER BY finished_at DESC, id DESC
      LIMIT $4`,
    [testUrn, new Date(window.from), new Date(window.to), window.limit],
  );
  return rows.map((r) => ({
    taskId: r.id,
    finishedAt: r.finished_at.getTime(),
    passing: r.passing ?? 0,
    failing: r.failing ?? 0,
  }));
}
