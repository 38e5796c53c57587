import type pg from "pg";
import type { Prisma, TaskType } from "../generated/prisma/client";
import type { Database } from "../client";
import { inTransaction } from "../transaction";
import { COLUMNS, LAPSED } from "./task-sql";
import { taskEndedEventInsert } from "../events/entity-change-events";
import type { ClaimOps, HeldTask, NewTask, TaskRow } from "./task-row";

const CLEAR_LEASE = "lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL";
/**
 * An attempt's ending keeps lease_owner: a finished task says which worker process ran its last attempt (operators
 * tracing a task to a worker's logs; the replica tests). Only an `active` row's owner holds anything.
 */
const END_LEASE = "lease_token = NULL, lease_expires_at = NULL";
const LEASE_FROM_NOW = "clock_timestamp() + make_interval(secs => $LEASE / 1000.0)";
const leaseFromNow = (param: string) => LEASE_FROM_NOW.replace("$LEASE", param);

/**
 * A final transition (completed, failed, cancelled) with its platform event: the UPDATE's ended rows feed the TASK
 * event of a truncation or retention task (entity-change-events.ts taskEndedEventInsert) in the same statement, so
 * every way a task ends tells of it exactly when it commits. Answers the ended rows' ids (rowCount as the UPDATE's).
 */
function ending(update: string): string {
  return `WITH ended AS (${update}
            RETURNING id, type, state, request, progress, result, failed_reason, created_by),
          event AS (${taskEndedEventInsert("ended")})
          SELECT id FROM ended`;
}

/**
 * The `task` table's statements: every transition of the state machine is one compare-and-set statement (or one short
 * transaction) here, named for the transition; `@mdp/tasks`' TaskLifecycle decides which to make and when. A worker's
 * statements match its attempt's lease token, so a stale attempt's writes (and the work in the same transaction) change
 * nothing.
 */
export class TaskRepository {
  constructor(private readonly db: Database) {}

  private get pool(): pg.Pool {
    return this.db.pool;
  }

  /** A short transaction of the caller's own statements (a progress write outside a step). */
  inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  async read(taskId: string, client: pg.ClientBase | pg.Pool = this.pool): Promise<TaskRow | null> {
    const { rows } = await client.query<TaskRow>(`SELECT ${COLUMNS} FROM task WHERE id = $1`, [taskId]);
    return rows[0] ?? null;
  }

  async readMany(taskIds: readonly string[]): Promise<TaskRow[]> {
    if (taskIds.length === 0) return [];
    const { rows } = await this.pool.query<TaskRow>(`SELECT ${COLUMNS} FROM task WHERE id = ANY($1::text[])`, [
      [...taskIds],
    ]);
    return rows;
  }

  /**
   * create: under a lock of the dedup key, an identical waiting or active task (not being cancelled), or a new waiting
   * row; `afterInsert` (an audit record) commits with a new row, `afterJoin` with the joining of an existing one.
   */
  async insertDeduped(
    input: NewTask,
    id: string,
    afterInsert?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>,
    afterJoin?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>,
  ): Promise<{ taskId: string; existing: boolean }> {
    return this.db.prisma.$transaction(async (tx) => {
      if (input.dedupKey !== undefined) {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${input.dedupKey}))`;
        const found = await tx.$queryRaw<Array<{ id: string }>>`
          SELECT id FROM task WHERE dedup_key = ${input.dedupKey} AND state IN ('waiting', 'active')
             AND NOT cancel_requested ORDER BY created_at LIMIT 1`;
        if (found[0]) {
          await afterJoin?.(tx, found[0].id);
          return { taskId: found[0].id, existing: true };
        }
      }
      await tx.$executeRaw`
        INSERT INTO task (id, type, state, request, dedup_key, progress, created_by, created_via, rows_per_second)
        VALUES (${id}, ${input.type}::"TaskType", 'waiting', ${JSON.stringify(input.request)}::jsonb,
                ${input.dedupKey ?? null}, ${JSON.stringify(input.progress)}::jsonb, ${input.createdBy},
                ${input.createdVia ?? null}, ${input.rowsPerSecond ?? null})`;
      await afterInsert?.(tx, id);
      return { taskId: id, existing: false };
    });
  }

  /** failUnqueued: a new row whose job could not be queued ends failed, saying why. */
  async failUnqueued(taskId: string, reason: string): Promise<void> {
    await this.pool.query(
      ending(
        `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now() WHERE id = $1 AND state = 'waiting'`,
      ),
      [taskId, reason],
    );
  }

  /** A caller's cancel: marks a waiting or active task; `afterRequest` commits with it, only when it took. */
  async requestCancel(
    taskId: string,
    afterRequest?: (tx: Prisma.TransactionClient, task: TaskRow) => Promise<void>,
  ): Promise<TaskRow | null> {
    return this.db.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<TaskRow[]>(
        `UPDATE task SET cancel_requested = true WHERE id = $1 AND state IN ('waiting', 'active') RETURNING ${COLUMNS}`,
        taskId,
      );
      if (rows[0]) await afterRequest?.(tx, rows[0]);
      return rows[0] ?? null;
    });
  }

  /**
   * rethrottle: a waiting or active task's pace (null: unthrottled), with `afterUpdate` (an audit record) in the same
   * transaction; the row afterwards, or null when it is already finished. Its attempt reads it at its next checkpoint.
   */
  async rethrottle(
    taskId: string,
    rowsPerSecond: number | null,
    afterUpdate?: (tx: Prisma.TransactionClient, task: TaskRow) => Promise<void>,
  ): Promise<TaskRow | null> {
    return this.db.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<TaskRow[]>(
        `UPDATE task SET rows_per_second = $2 WHERE id = $1 AND state IN ('waiting', 'active') RETURNING ${COLUMNS}`,
        taskId,
        rowsPerSecond,
      );
      if (rows[0]) await afterUpdate?.(tx, rows[0]);
      return rows[0] ?? null;
    });
  }

  /** Marks every waiting or active task `createdBy` created, in the caller's transaction; oldest first. */
  async requestCancelAllIn(tx: Prisma.TransactionClient, createdBy: string): Promise<TaskRow[]> {
    return tx.$queryRawUnsafe<TaskRow[]>(
      `WITH marked AS (
         UPDATE task SET cancel_requested = true
          WHERE created_by = $1 AND state IN ('waiting', 'active') AND NOT cancel_requested
         RETURNING ${COLUMNS})
       SELECT * FROM marked ORDER BY "createdAt", id`,
      createdBy,
    );
  }

  /** Ends cancelled a task no attempt runs: waiting, or active with a lapsed lease. */
  async cancelUnheld(taskId: string, reason: string): Promise<void> {
    await this.pool.query(
      ending(`UPDATE task SET state = 'cancelled', finished_at = now(), failed_reason = $2, ${CLEAR_LEASE}
        WHERE id = $1 AND (state = 'waiting' OR (state = 'active' AND ${LAPSED}))`),
      [taskId, reason],
    );
  }

  /**
   * claim's transaction: the row locked (with its lease token), and what the lifecycle may do with it before the
   * lock is released.
   */
  async claim<T>(
    taskId: string,
    decide: (task: (TaskRow & { leaseToken: string | null }) | undefined, ops: ClaimOps) => Promise<T>,
  ): Promise<T> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<TaskRow & { leaseToken: string | null }>(
        `SELECT ${COLUMNS}, lease_token AS "leaseToken" FROM task WHERE id = $1 FOR UPDATE`,
        [taskId],
      );
      return decide(rows[0], {
        cancel: async (reason) => {
          await client.query(
            ending(
              `UPDATE task SET state = 'cancelled', failed_reason = $2, finished_at = now(), ${CLEAR_LEASE} WHERE id = $1`,
            ),
            [taskId, reason],
          );
        },
        activate: async (owner, token, leaseMs) => {
          const { rows: claimed } = await client.query<{ attempt: number }>(
            `UPDATE task SET state = 'active', attempts_made = attempts_made + 1, started_at = COALESCE(started_at, now()),
                    failed_reason = NULL, lease_owner = $2, lease_token = $3, lease_expires_at = ${leaseFromNow("$4")}
              WHERE id = $1 RETURNING attempts_made AS attempt`,
            [taskId, owner, token, leaseMs],
          );
          return claimed[0]!.attempt;
        },
      });
    });
  }

  /**
   * progress: the holder's update of the stored progress, in `client`'s transaction; renews the lease. Null when the
   * attempt no longer holds the task (the caller rolls the step back).
   */
  async writeProgress<P extends object>(
    client: pg.ClientBase,
    held: HeldTask,
    leaseMs: number,
    update: (stored: Record<string, unknown>) => P,
  ): Promise<P | null> {
    const { rows } = await client.query<{ progress: Record<string, unknown> }>(
      `SELECT progress FROM task WHERE id = $1 AND lease_token = $2 AND state = 'active' FOR UPDATE`,
      [held.taskId, held.token],
    );
    if (!rows[0]) return null;
    const next = update(rows[0].progress ?? {});
    await client.query(`UPDATE task SET progress = $2::jsonb, lease_expires_at = ${leaseFromNow("$3")} WHERE id = $1`, [
      held.taskId,
      JSON.stringify(next),
      leaseMs,
    ]);
    return next;
  }

  /** The row with whether the attempt still holds it (checkpoint). */
  async readHeld(held: HeldTask): Promise<(TaskRow & { held: boolean }) | null> {
    const { rows } = await this.pool.query<TaskRow & { held: boolean }>(
      `SELECT ${COLUMNS}, lease_token = $2 AND state = 'active' AS held FROM task WHERE id = $1`,
      [held.taskId, held.token],
    );
    return rows[0] ?? null;
  }

  /** handBack: the holder puts the task back to waiting, saying why. */
  async handBack(held: HeldTask, reason: string): Promise<void> {
    await this.pool.query(
      `UPDATE task SET state = 'waiting', failed_reason = $3, ${CLEAR_LEASE}
        WHERE id = $1 AND lease_token = $2 AND state = 'active'`,
      [held.taskId, held.token, reason],
    );
  }

  /**
   * An attempt's ending, if it still holds the task (one transaction): cancelled (`cancelReason(task)`) when a cancel
   * was requested, else failed (`final`) or waiting for the next attempt.
   */
  async settleAttempt(
    held: HeldTask,
    final: boolean,
    reason: string,
    cancelReason: (task: TaskRow) => string,
  ): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<TaskRow>(
        `SELECT ${COLUMNS} FROM task WHERE id = $1 AND lease_token = $2 AND state = 'active' FOR UPDATE`,
        [held.taskId, held.token],
      );
      const task = rows[0];
      if (!task) return; // taken over, or ended by a cancel: the stale attempt's ending changes nothing
      if (task.cancelRequested) {
        await client.query(
          ending(
            `UPDATE task SET state = 'cancelled', failed_reason = $2, finished_at = now(), ${END_LEASE} WHERE id = $1`,
          ),
          [held.taskId, cancelReason(task)],
        );
      } else if (final) {
        await client.query(
          ending(
            `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now(), ${END_LEASE} WHERE id = $1`,
          ),
          [held.taskId, reason],
        );
      } else {
        await client.query(`UPDATE task SET state = 'waiting', failed_reason = $2, ${CLEAR_LEASE} WHERE id = $1`, [
          held.taskId,
          reason,
        ]);
      }
    });
  }

  /** complete / fail / cancel by the holder: whether it still held the task. */
  async end(
    held: HeldTask,
    state: "completed" | "failed" | "cancelled",
    progress: object | undefined,
    failedReason: string | null,
    result?: unknown,
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      ending(`UPDATE task SET state = $3::"TaskState", progress = COALESCE($4::jsonb, progress), failed_reason = $5,
              result = $6::jsonb, finished_at = now(), ${END_LEASE}
        WHERE id = $1 AND lease_token = $2 AND state = 'active'`),
      [
        held.taskId,
        held.token,
        state,
        progress === undefined ? null : JSON.stringify(progress),
        failedReason,
        result === undefined ? null : JSON.stringify(result),
      ],
    );
    return rowCount !== 0;
  }

  /** giveUp: BullMQ failed the task's job without running it; progress stays as committed. */
  async giveUp(taskId: string, reason: string): Promise<void> {
    await this.pool.query(
      ending(`UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now(), ${CLEAR_LEASE}
        WHERE id = $1 AND state IN ('waiting', 'active')`),
      [taskId, reason],
    );
  }

  /**
   * Renews, in one statement, the leases of `owner`'s running attempts (by token) and of the token-less rows its jobs
   * hold; answers what it renewed, with whether each was asked to stop.
   */
  async renew(
    owner: string,
    leaseMs: number,
    tokens: readonly string[],
    rows: readonly string[],
  ): Promise<Array<{ id: string; token: string | null; cancelRequested: boolean }>> {
    const { rows: renewed } = await this.pool.query<{ id: string; token: string | null; cancelRequested: boolean }>(
      `UPDATE task SET lease_expires_at = ${leaseFromNow("$2")}
        WHERE state = 'active' AND lease_owner = $1
          AND (lease_token = ANY($3::text[]) OR (lease_token IS NULL AND id = ANY($4::text[])))
        RETURNING id, lease_token AS token, cancel_requested AS "cancelRequested"`,
      [owner, leaseMs, [...tokens], [...rows]],
    );
    return renewed;
  }

  /** Ends cancelled a task whose attempt did not stop at a checkpoint when asked; the attempt is fenced out. */
  async cancelStuck(held: HeldTask, cancelReason: (task: TaskRow) => string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<TaskRow>(
        `SELECT ${COLUMNS} FROM task WHERE id = $1 AND lease_token = $2 AND state = 'active' FOR UPDATE`,
        [held.taskId, held.token],
      );
      if (!rows[0]) return;
      await client.query(
        ending(
          `UPDATE task SET state = 'cancelled', failed_reason = $2, finished_at = now(), ${END_LEASE} WHERE id = $1`,
        ),
        [held.taskId, cancelReason(rows[0])],
      );
    });
  }

  /** reconcile: active tasks whose lease lapsed wait again, saying which attempt stopped. */
  async releaseLapsed(): Promise<TaskRow[]> {
    const { rows } = await this.pool.query<TaskRow>(
      `UPDATE task SET state = 'waiting', ${CLEAR_LEASE},
              failed_reason = 'Attempt ' || attempts_made || ' stopped: its worker stopped responding; waiting for the next attempt'
        WHERE state = 'active' AND ${LAPSED} RETURNING ${COLUMNS}`,
    );
    return rows;
  }

  /** Ends cancelled a waiting task (one asked to stop whose lease lapsed), saying how far it got. */
  async cancelWaiting(taskId: string, reason: string): Promise<void> {
    await this.pool.query(
      ending(
        `UPDATE task SET state = 'cancelled', failed_reason = $2, finished_at = now() WHERE id = $1 AND state = 'waiting'`,
      ),
      [taskId, reason],
    );
  }

  /** Waiting tasks of a type (and request kind) older than `graceMs`. */
  async waitingOlderThan(type: TaskType, graceMs: number, kind?: string): Promise<TaskRow[]> {
    const { rows } = await this.pool.query<TaskRow>(
      `SELECT ${COLUMNS} FROM task
        WHERE type = $1::"TaskType" AND state = 'waiting' AND created_at < now() - make_interval(secs => $2 / 1000.0)
          AND ($3::text IS NULL OR request->>'kind' = $3)`,
      [type, graceMs, kind ?? null],
    );
    return rows;
  }

  /** Ends failed a waiting task whose job vanished and cannot be queued again. */
  async failWaiting(taskId: string, reason: string): Promise<void> {
    await this.pool.query(
      ending(
        `UPDATE task SET state = 'failed', failed_reason = $2, finished_at = now() WHERE id = $1 AND state = 'waiting'`,
      ),
      [taskId, reason],
    );
  }
}
