import type { Queryable } from "../timeseries/timeseries.store";

/** The lease its claims write: the worker process's (TaskLifecycle's owner and leaseMs). */
export interface LeaseHolder {
  readonly owner: string;
  readonly leaseMs: number;
}

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

export function percentOf(evaluated: number, total: number): number {
  return total === 0 ? 100 : Math.min(100, Math.round((10_000 * evaluated) / total) / 100);
}

/** The row of one synchronous evaluation (POST /gms/test?action=evaluate), as its worker records it. */
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
  /**
   * the answer as sent to the waiting gateway (an EvaluationItemReply of @mdp/queues), kept when it may not have reached
   * it: the gateway answers its caller from it (storedAnswers) exactly as the reply would have
   */
  reply?: unknown;
}

/** An ended evaluation's row as a gateway whose reply went missing reads it (storedAnswers). */
export interface StoredAnswer {
  taskId: string;
  state: "completed" | "failed" | "cancelled";
  /** EvaluationRow.reply: null when the worker's reply was received by a gateway (or the row is older) */
  reply: unknown;
  result: unknown;
  failedReason: string | null;
}

/**
 * The statements of synchronous evaluations' task rows; which one runs when is @mdp/tasks' EvaluationLifecycle's to
 * decide. Unlike truncations and test runs these rows exist only where a caller can have been given the task id,
 * which only a 504 hands out, so most evaluations write none (the evaluate hot path must stay one read and no task
 * write). Every statement changes a row only while it is waiting or active, so a late duplicate delivery cannot
 * overwrite a cancellation or an earlier outcome.
 */
export class EvaluationTaskRows {
  constructor(
    private readonly db: Queryable,
    private readonly lifecycle: LeaseHolder,
  ) {}

  /**
   * waiting → active, embedded in the evaluate job's one read (so it costs no round trip): a CTE named `started` that makes the
   * rows of `$ids` that are waiting (their callers got a 504) active under this process's lease, returning their ids.
   * `params` are the positions of (task ids, lease owner, lease ms) in the embedding statement; `values` their values.
   */
  startedCte(params: { ids: string; owner: string; leaseMs: string }): string {
    return `started AS (
    UPDATE task SET state = 'active', started_at = COALESCE(started_at, now()), lease_owner = ${params.owner},
           lease_expires_at = clock_timestamp() + make_interval(secs => ${params.leaseMs}::int / 1000.0)
     WHERE id = ANY(${params.ids}::text[]) AND state = 'waiting'
    RETURNING id)`;
  }

  /** The owner and lease the startedCte's parameters take. */
  leaseValues(): [string, number] {
    return [this.lifecycle.owner, this.lifecycle.leaseMs];
  }

  /** A waiting row, unless the worker wrote one first. */
  async insertWaiting(row: { taskId: string; request: unknown; progress: EvaluationProgress; createdBy: string }) {
    await this.db.query(
      `INSERT INTO task (id, type, state, request, progress, created_by)
       VALUES ($1, 'EVALUATE_TESTS', 'waiting', $2::jsonb, $3::jsonb, $4) ON CONFLICT (id) DO NOTHING`,
      [row.taskId, JSON.stringify(row.request), JSON.stringify(row.progress), row.createdBy],
    );
  }

  /** A failed row, unless the worker wrote one (a worker cut off from PostgreSQL could not). */
  async insertFailed(row: {
    taskId: string;
    request: unknown;
    progress: EvaluationProgress;
    createdBy: string;
    failedReason: string;
  }): Promise<void> {
    await this.db.query(
      `INSERT INTO task (id, type, state, request, progress, created_by, failed_reason, finished_at)
       VALUES ($1, 'EVALUATE_TESTS', 'failed', $2::jsonb, $3::jsonb, $4, $5, now()) ON CONFLICT (id) DO NOTHING`,
      [row.taskId, JSON.stringify(row.request), JSON.stringify(row.progress), row.createdBy, row.failedReason],
    );
  }

  /** waiting → failed, saying why. */
  async failWaiting(taskId: string, failedReason: string): Promise<void> {
    await this.db.query(
      `UPDATE task SET state = 'failed', finished_at = now(), failed_reason = $2 WHERE id = $1 AND state = 'waiting'`,
      [taskId, failedReason],
    );
  }

  /**
   * Writes each row in the state its transition gave it (completed, failed, or waiting for a retry): one statement when
   * the job ends, just after its callers got their answers. The gateway writes a row only when its caller gets a 504,
   * and whichever of the two statements comes second completes the other's row. The commit is asynchronous (synchronous_commit off for this
   * statement's transaction only): waiting for the WAL flush would cost the job a disk sync, so a PostgreSQL crash
   * can lose the last fraction of a second of these rows. One row PostgreSQL refuses does not cost the others theirs.
   */
  async write(rows: readonly EvaluationRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.writeRows(rows);
    } catch (error) {
      if (rows.length === 1) throw error;
      let refusal: unknown;
      for (const row of rows) {
        await this.writeRows([row]).catch((cause: unknown) => {
          refusal ??= cause;
        });
      }
      if (refusal !== undefined) throw refusal;
    }
  }

  private async writeRows(rows: readonly EvaluationRow[]): Promise<void> {
    await this.db.query({
      name: "evaluation-record",
      text: `WITH commit_mode AS (SELECT set_config('synchronous_commit', 'off', true))
             INSERT INTO task (id, type, state, request, progress, result, failed_reason, attempts_made, created_by,
                               created_at, started_at, finished_at, reply)
             SELECT r.id, 'EVALUATE_TESTS', r.state::"TaskState", r.request, r.progress, r.result, r.failed_reason,
                    r.attempts_made, r.created_by, r.created_at, r.started_at,
                    CASE WHEN r.state NOT IN ('waiting', 'active') THEN now() END, r.reply
               FROM commit_mode,
                    jsonb_to_recordset($1::jsonb)
                      AS r(id text, state text, request jsonb, progress jsonb, result jsonb, failed_reason text,
                           attempts_made int, created_by text, created_at timestamptz, started_at timestamptz,
                           reply jsonb)
             ON CONFLICT (id) DO UPDATE
                SET state = EXCLUDED.state, progress = EXCLUDED.progress, result = EXCLUDED.result,
                    failed_reason = EXCLUDED.failed_reason, reply = EXCLUDED.reply,
                    attempts_made = GREATEST(task.attempts_made, EXCLUDED.attempts_made),
                    started_at = COALESCE(task.started_at, EXCLUDED.started_at), finished_at = EXCLUDED.finished_at,
                    lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
              WHERE task.state IN ('waiting', 'active')`,
      values: [rowsDocument(rows)],
    });
  }

  /**
   * The ended rows among `taskIds`, in one statement whatever their number: a gateway reads them for the requests whose
   * reply has not come (its reply connection was lost, or the wait is long), to answer their callers from them. Rows
   * still waiting or active, and ids without a row, are left out.
   */
  async storedAnswers(taskIds: readonly string[]): Promise<StoredAnswer[]> {
    if (taskIds.length === 0) return [];
    const { rows } = await this.db.query<StoredAnswer>({
      name: "evaluation-stored-answers",
      text: `SELECT id AS "taskId", state, reply, result, failed_reason AS "failedReason" FROM task
              WHERE id = ANY($1::text[]) AND type = 'EVALUATE_TESTS' AND state IN ('completed', 'failed', 'cancelled')`,
      values: [taskIds],
    });
    return rows;
  }

  /**
   * → active before a push, in the pushing transaction's own short transaction (`client`'s), committed before the push:
   * the rows of the tasks that push become active under this process's lease, written now if their callers did not
   * get a 504 (whose row the gateway then leaves as it is). Returned are the tasks that must not push: cancelled by
   * their callers, or asked to stop, which end cancelled here. A cancellation therefore either lands before (and
   * stops the push) or finds the task active, so it only asks it to stop, and it then completes: a task is never
   * "cancelled" with its results pushed.
   */
  async claimForPush(
    client: Queryable,
    rows: ReadonlyArray<Omit<EvaluationRow, "state" | "result" | "failedReason" | "reply">>,
  ): Promise<Set<string>> {
    const ids = rows.map((r) => r.taskId);
    await client.query({
      name: "evaluation-claim",
      text: `INSERT INTO task (id, type, state, request, progress, attempts_made, created_by, created_at, started_at,
                               lease_owner, lease_expires_at)
             SELECT r.id, 'EVALUATE_TESTS', 'active', r.request, r.progress, r.attempts_made, r.created_by,
                    r.created_at, r.started_at, $2, clock_timestamp() + make_interval(secs => $3::int / 1000.0)
               FROM jsonb_to_recordset($1::jsonb)
                      AS r(id text, request jsonb, progress jsonb, attempts_made int, created_by text,
                           created_at timestamptz, started_at timestamptz)
             ON CONFLICT (id) DO UPDATE
                SET state = 'active', started_at = COALESCE(task.started_at, EXCLUDED.started_at),
                    attempts_made = GREATEST(task.attempts_made, EXCLUDED.attempts_made),
                    lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at
              WHERE task.state = 'waiting' AND NOT task.cancel_requested`,
      values: [rowsDocument(rows), this.lifecycle.owner, this.lifecycle.leaseMs],
    });
    const { rows: stopped } = await client.query<{ id: string }>({
      name: "evaluation-claim-stopped",
      text: `WITH locked AS (
               SELECT id, state, cancel_requested FROM task WHERE id = ANY($1::text[]) FOR UPDATE),
             ended AS (
               UPDATE task SET state = 'cancelled', finished_at = now(),
                      failed_reason = 'Cancelled before its results were pushed',
                      lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
                 FROM locked
                WHERE task.id = locked.id AND locked.state IN ('waiting', 'active') AND locked.cancel_requested)
             SELECT id FROM locked WHERE state = 'cancelled' OR cancel_requested`,
      values: [ids],
    });
    return new Set(stopped.map((r) => r.id));
  }

  /**
   * Deletes at most `limit` finished synchronous evaluation rows older than `maxAgeHours` (a day: as long as their
   * BullMQ jobs are kept), in one statement; replicas share the work with SKIP LOCKED. Returns how many went (the
   * retention chore repeats it: @mdp/core's pruneInBatches).
   */
  async pruneFinishedBatch(maxAgeHours: number, limit: number): Promise<number> {
    const { rowCount } = await this.db.query(
      `DELETE FROM task WHERE id IN (
         SELECT id FROM task
          WHERE type = 'EVALUATE_TESTS' AND request->>'kind' = 'evaluate'
            AND state IN ('completed', 'failed', 'cancelled')
            AND created_at < now() - make_interval(hours => $1)
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [maxAgeHours, limit],
    );
    return rowCount ?? 0;
  }
}

/**
 * Rows travel as one JSON document: results are already JSON, and one JSON.stringify costs far less than pg's escaping
 * of ten array literals (results included) in this process.
 */
function rowsDocument(
  rows: ReadonlyArray<Omit<EvaluationRow, "state"> & Partial<Pick<EvaluationRow, "state">>>,
): string {
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
      reply: r.reply ?? null,
    })),
  );
}
