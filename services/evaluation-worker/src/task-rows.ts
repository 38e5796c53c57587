import type { Job } from "bullmq";
import type { Queryable } from "@mdp/db";

/** What getTaskStatus shows of an evaluation task while it runs and after. */
export interface EvaluationProgress {
  evaluated: number;
  total: number;
  passing: number;
  failing: number;
  /** evaluated, but the test's on clause did not select the entity (its conditions did not hold) */
  notApplicable: number;
  percent: number;
}

export type TaskEnd = "completed" | "failed" | "cancelled";

export function percentOf(evaluated: number, total: number): number {
  return total === 0 ? 100 : Math.min(100, Math.round((10_000 * evaluated) / total) / 100);
}

/** The row of one synchronous evaluation, as the worker records it. */
export interface EvaluationRow {
  taskId: string;
  /** waiting: an attempt failed and BullMQ will retry it; active: about to push its results */
  state: "completed" | "failed" | "waiting" | "active";
  request: unknown;
  createdBy: string;
  createdAt: Date;
  startedAt: Date;
  attemptsMade: number;
  progress: EvaluationProgress;
  result?: unknown;
  failedReason?: string | null;
}

/**
 * Writes of the durable task row (the table the gateway's getTaskStatus reads). Only a row still waiting or active
 * is changed, so a late duplicate delivery cannot overwrite a cancellation or an earlier outcome.
 */
export class TaskRows {
  constructor(private readonly db: Queryable) {}

  /** Ends a test run's row (the gateway wrote it, waiting, before queueing the job). */
  async finish(
    taskId: string,
    state: TaskEnd,
    details: {
      progress: EvaluationProgress;
      result?: unknown;
      failedReason?: string | null;
      attemptsMade?: number;
      startedAt?: Date;
    },
  ): Promise<void> {
    await this.db.query(
      `UPDATE task SET state = $2::"TaskState", progress = $3::jsonb, result = $4::jsonb, failed_reason = $5,
              attempts_made = GREATEST(attempts_made, $6), started_at = COALESCE(started_at, $7), finished_at = now()
        WHERE id = $1 AND state IN ('waiting', 'active')`,
      [
        taskId,
        state,
        JSON.stringify(details.progress),
        details.result === undefined ? null : JSON.stringify(details.result),
        details.failedReason ?? null,
        details.attemptsMade ?? 0,
        details.startedAt ?? null,
      ],
    );
  }

  /**
   * Records synchronous evaluations of one job (those whose callers can have been given their task ids, see
   * evaluate.processor.ts): one statement when the job ends, just after its callers got their answers. The gateway
   * writes a row only when its caller gets a 504, and whichever of the two statements comes second completes the
   * other's row. The commit is asynchronous (synchronous_commit off for this statement's transaction only): waiting
   * for the WAL flush would cost the job a disk sync. A PostgreSQL crash can therefore lose the last fraction of a
   * second of these rows.
   */
  async recordEvaluations(rows: readonly EvaluationRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.writeEvaluations(rows);
    } catch (error) {
      if (rows.length === 1) throw error;
      // One row PostgreSQL refuses must not cost the other requests of the job theirs: each is written alone, and the
      // first refusal is thrown once all were tried.
      let refusal: unknown;
      for (const row of rows) {
        await this.writeEvaluations([row]).catch((cause: unknown) => {
          refusal ??= cause;
        });
      }
      if (refusal !== undefined) throw refusal;
    }
  }

  private async writeEvaluations(rows: readonly EvaluationRow[]): Promise<void> {
    await this.db.query({
      name: "evaluation-record",
      text: `WITH commit_mode AS (SELECT set_config('synchronous_commit', 'off', true))
             INSERT INTO task (id, type, state, request, progress, result, failed_reason, attempts_made, created_by,
                               created_at, started_at, finished_at)
             SELECT r.id, 'EVALUATE_TESTS', r.state::"TaskState", r.request, r.progress, r.result, r.failed_reason,
                    r.attempts_made, r.created_by, r.created_at, r.started_at,
                    CASE WHEN r.state NOT IN ('waiting', 'active') THEN now() END
               FROM commit_mode,
                    jsonb_to_recordset($1::jsonb)
                      AS r(id text, state text, request jsonb, progress jsonb, result jsonb, failed_reason text,
                           attempts_made int, created_by text, created_at timestamptz, started_at timestamptz)
             ON CONFLICT (id) DO UPDATE
                SET state = EXCLUDED.state, progress = EXCLUDED.progress, result = EXCLUDED.result,
                    failed_reason = EXCLUDED.failed_reason,
                    attempts_made = GREATEST(task.attempts_made, EXCLUDED.attempts_made),
                    started_at = COALESCE(task.started_at, EXCLUDED.started_at), finished_at = EXCLUDED.finished_at
              WHERE task.state IN ('waiting', 'active')`,
      values: [rowsDocument(rows)],
    });
  }

  /**
   * Before an evaluate job pushes results, in a transaction of its own (`client`'s) committed before the push: the rows
   * of the tasks that push become active, written now if their callers did not get a 504 (whose row the gateway then
   * leaves as it is). Returned are the tasks that must not push: cancelled by their callers (only a caller that got a
   * 504 knows its task id), or asked to stop, which end cancelled here. A cancellation therefore either lands before
   * (and stops the push) or finds the task active, so it only asks it to stop, and it then completes: a task is never
   * "cancelled" with its results pushed, whenever its 504's row is written.
   */
  async claimForPush(client: Queryable, rows: readonly EvaluationRow[]): Promise<Set<string>> {
    const ids = rows.map((r) => r.taskId);
    await client.query({
      name: "evaluation-claim",
      text: `INSERT INTO task (id, type, state, request, progress, attempts_made, created_by, created_at, started_at)
             SELECT r.id, 'EVALUATE_TESTS', 'active', r.request, r.progress, r.attempts_made, r.created_by,
                    r.created_at, r.started_at
               FROM jsonb_to_recordset($1::jsonb)
                      AS r(id text, request jsonb, progress jsonb, attempts_made int, created_by text,
                           created_at timestamptz, started_at timestamptz)
             ON CONFLICT (id) DO UPDATE
                SET state = 'active', started_at = COALESCE(task.started_at, EXCLUDED.started_at),
                    attempts_made = GREATEST(task.attempts_made, EXCLUDED.attempts_made)
              WHERE task.state = 'waiting' AND NOT task.cancel_requested`,
      values: [rowsDocument(rows)],
    });
    const { rows: stopped } = await client.query<{ id: string }>({
      name: "evaluation-claim-stopped",
      text: `WITH locked AS (
               SELECT id, state, cancel_requested FROM task WHERE id = ANY($1::text[]) FOR UPDATE),
             ended AS (
               UPDATE task SET state = 'cancelled', finished_at = now(),
                      failed_reason = 'Cancelled before its results were pushed'
                 FROM locked
                WHERE task.id = locked.id AND locked.state IN ('waiting', 'active') AND locked.cancel_requested)
             SELECT id FROM locked WHERE state = 'cancelled' OR cancel_requested`,
      values: [ids],
    });
    return new Set(stopped.map((r) => r.id));
  }

  /** Ends a test run's row as failed, its progress as it stands (BullMQ failed the job without running it). */
  async giveUp(taskId: string, failedReason: string): Promise<void> {
    await this.db.query(
      `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now()
        WHERE id = $1 AND state IN ('waiting', 'active')`,
      [taskId, failedReason],
    );
  }

  /** A failed attempt is recorded; the task becomes failed only when BullMQ will not retry it. */
  async recordAttemptFailure(job: Job, taskId: string, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    const attempt = job.attemptsMade + 1;
    const lastAttempt = attempt >= (job.opts.attempts ?? 1);
    await this.db
      .query(
        lastAttempt
          ? `UPDATE task SET state = 'failed', failed_reason = $2, attempts_made = $3, finished_at = now()
              WHERE id = $1 AND state IN ('waiting', 'active')`
          : `UPDATE task SET state = 'waiting', failed_reason = $2, attempts_made = $3
              WHERE id = $1 AND state IN ('waiting', 'active')`,
        [taskId, lastAttempt ? message : `Attempt ${attempt} failed, retrying: ${message}`, attempt],
      )
      .catch(() => undefined); // PostgreSQL itself may be what failed; BullMQ still records the failure
  }
}

/**
 * Rows travel as one JSON document: results are already JSON, and one JSON.stringify costs far less than pg's escaping
 * of ten array literals (results included) in this process.
 */
function rowsDocument(rows: readonly EvaluationRow[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      id: r.taskId,
      state: r.state,
      request: r.request,
      progress: r.progress,
      result: r.result ?? null,
      failed_reason: r.failedReason ?? null,
      attempts_made: r.attemptsMade,
      created_by: r.createdBy,
      created_at: r.createdAt,
      started_at: r.startedAt,
    })),
  );
}
