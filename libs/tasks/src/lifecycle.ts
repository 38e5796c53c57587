import { randomUUID } from "node:crypto";
import { UnrecoverableError, type Job } from "bullmq";
import type pg from "pg";
import { handBack, JobCancelledError } from "@mdp/queues";
import { serviceUnavailable, unavailableDependency, type Logger } from "@mdp/core";
import { TaskRepository, type Database, type NewTask, type Prisma, type TaskRow } from "@mdp/db";
import { cancellationReason } from "./cancellation";
import {
  CLAIM_RETRY_MS,
  DEFAULT_LEASE_MS,
  defaultOwner,
  LeaseLostError,
  type ClaimResult,
  type Lease,
  type LifecycleOptions,
} from "./lease";
import { LeaseRenewal, type Ending } from "./lease-renewal";
import { failureText } from "./task-status";
import { EvaluationLifecycle } from "./evaluation-lifecycle";

export type TaskType = TaskRow["type"];
export type { TaskRow };

/** A task to create: the row's fields (NewTask), what to call it, and what commits with a new row. */
export interface CreateTask extends NewTask {
  /** what the log and errors call it ("a truncation task") */
  what: string;
  /** written in the same transaction as a new row (an audit record) */
  afterInsert?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>;
  /** written in the same transaction as the request's joining of an identical task (the joiner's audit record) */
  afterJoin?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>;
}

export interface Enqueuing {
  /** queues the task's job (job id = task id) */
  enqueue: (taskId: string) => Promise<unknown>;
  /** whether the task's job is in Redis */
  jobExists: (taskId: string) => Promise<boolean>;
}

/**
 * The one owner of the `task` table's lifecycle: every transition of the state machine (states.ts) is a method
 * here, one compare-and-set statement (or one short transaction) each. Workers hold a task through a Lease; their
 * writes name it, so after a lapse and a takeover the stale attempt's writes (and the deletions in the same
 * transaction) roll back.
 */
export class TaskLifecycle {
  readonly leaseMs: number;
  readonly owner: string;
  private readonly rows: TaskRepository;
  /** the attempts this process runs and the leases it renews */
  private readonly leases: LeaseRenewal;
  /** the rows of synchronous evaluations, claimed by their job rather than one by one (evaluation-lifecycle.ts) */
  readonly evaluations: EvaluationLifecycle;

  constructor(
    db: Database,
    private readonly logger: Logger,
    options: LifecycleOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.owner = options.owner ?? defaultOwner();
    this.rows = new TaskRepository(db);
    this.leases = new LeaseRenewal(this.rows, logger, this.owner, this.leaseMs);
    this.evaluations = new EvaluationLifecycle(db.pool, this);
  }

  // ---- reading ---------------------------------------------------------------------------------------------------

  read(taskId: string, client?: pg.ClientBase | pg.Pool): Promise<TaskRow | null> {
    return this.rows.read(taskId, client);
  }

  /** The tasks of these ids that exist, in no particular order (one statement). */
  readMany(taskIds: readonly string[]): Promise<TaskRow[]> {
    return this.rows.readMany(taskIds);
  }

  // ---- create ----------------------------------------------------------------------------------------------------

  /**
   * create: lock the dedup key, return an identical waiting or active task (not being cancelled), or insert a new
   * waiting row; then queue its job (job id = task id). A job that cannot be queued ends a new row as failed, saying
   * why, and throws the shared outage error with the task id; a row an earlier request wrote keeps waiting (the
   * reconciler queues it again).
   */
  async create(input: CreateTask, queue: Enqueuing): Promise<{ taskId: string; existing: boolean }> {
    const { taskId, existing } = await this.rows.insertDeduped(input, randomUUID(), input.afterInsert, input.afterJoin);
    // A row whose job never reached Redis (a crash between the two) gets its job now: the job id is the task id.
    if (existing && (await queue.jobExists(taskId))) return { taskId, existing };
    try {
      await queue.enqueue(taskId);
    } catch (error) {
      const which = unavailableDependency(error);
      this.logger.error({ taskId, err: error }, `could not queue ${input.what}`);
      if (existing) throw which ? serviceUnavailable(which) : error;
      const ended = await this.failUnqueued(taskId, which).then(
        () => true,
        (markError: unknown) => {
          // PostgreSQL gone as well: the row stays waiting, which an identical request (or the reconciler) picks up.
          this.logger.error({ taskId, err: markError }, `could not mark ${input.what} as failed`);
          return false;
        },
      );
      throw which ? serviceUnavailable(which, ended ? { taskId } : {}) : error;
    }
    return { taskId, existing };
  }

  /** failUnqueued: a new row whose job could not be queued ends failed, saying why. */
  async failUnqueued(taskId: string, which: string | undefined): Promise<void> {
    const reason = which ? `Could not be queued: ${which} is unavailable.` : "Could not be queued: internal error.";
    await this.rows.failUnqueued(taskId, reason);
  }

  // ---- cancel (gateway) ------------------------------------------------------------------------------------------

  /**
   * cancel, as a caller asks it: the task is marked cancelRequested; a waiting one, or an active one whose lease lapsed
   * (no attempt runs it), ends cancelled at once, saying how far earlier attempts got, and `releaseJob` hands its job
   * to a worker now (a delayed one promoted), whose claim finds the task cancelled and ends the job so. An active
   * one stops at its attempt's next checkpoint; an attempt that does not get there (hung) is ended cancelled by its
   * own process's renewal (renewLeases), and a process that died leaves a lease that lapses, which the next claim or
   * reconcile ends cancelled. Returns the row afterwards, or null when it is already finished. `afterRequest` (an
   * audit record) is written in the same transaction as the request, and only when it took.
   */
  async requestCancel(
    taskId: string,
    releaseJob: () => Promise<boolean>,
    afterRequest?: (tx: Prisma.TransactionClient, task: TaskRow) => Promise<void>,
  ): Promise<TaskRow | null> {
    const task = await this.rows.requestCancel(taskId, afterRequest);
    if (!task) return null;
    await this.settleCancel(task, releaseJob);
    return this.read(taskId);
  }

  /**
   * rethrottle, as a caller asks it: a waiting or active task's pace (rows per second; null: unthrottled). Its attempt
   * reads it at its next checkpoint, and at least every PACE_RECHECK_MS while it waits for the pace (the runner).
   * Returns the row afterwards, or null when it is already finished; `afterUpdate` (an audit record) commits with it.
   */
  rethrottle(
    taskId: string,
    rowsPerSecond: number | null,
    afterUpdate?: (tx: Prisma.TransactionClient, task: TaskRow) => Promise<void>,
  ): Promise<TaskRow | null> {
    return this.rows.rethrottle(taskId, rowsPerSecond, afterUpdate);
  }

  /**
   * requestCancel's first half for every waiting or active task `createdBy` created, in the caller's transaction (an
   * incident response's, with its audit rows): each is marked cancelRequested. Answers them, oldest first (a user's
   * live tasks: bounded by its rate limits and the dedup of identical requests); `settleCancel` then ends each waiting
   * one at once, and a worker ends any other at its next checkpoint or claim.
   */
  requestCancelAllIn(tx: Prisma.TransactionClient, createdBy: string): Promise<TaskRow[]> {
    return this.rows.requestCancelAllIn(tx, createdBy);
  }

  /**
   * requestCancel's second half: a waiting task (or one whose worker is gone) ends cancelled now, and `releaseJob`
   * lets a worker end its job; otherwise its attempt stops it (see requestCancel).
   */
  async settleCancel(task: TaskRow, releaseJob: () => Promise<boolean>): Promise<void> {
    if (task.state === "waiting" || task.leaseLapsed) {
      // The row is the truth: whichever of this and a claim comes first wins (both lock the row). The job is kept, not
      // removed, so that the dashboard shows the cancel (docs/queue-dashboard.md): its delivery ends it cancelled.
      await this.rows.cancelUnheld(task.id, cancellationReason(task));
      await releaseJob().catch(() => false);
    }
  }

  // ---- worker transitions ----------------------------------------------------------------------------------------

  /**
   * claim, as a BullMQ handler makes it at the start of an attempt: the claimed task, or the finished task's result
   * for a duplicate delivery. A missing or cancelled task ends the job for good (UnrecoverableError); a task another
   * attempt still holds (BullMQ delivered the job again while it runs) moves the job to delayed to come back later.
   */
  async claimJob(
    taskId: string,
    job: Job,
    token: string | undefined,
  ): Promise<{ outcome: "claimed"; task: TaskRow; lease: Lease } | { outcome: "finished"; result: unknown }> {
    let claim: ClaimResult;
    try {
      claim = await this.claim(taskId);
    } catch (error) {
      if (unavailableDependency(error) !== "PostgreSQL") throw error;
      // PostgreSQL is away (restarting): no attempt started, so none of the job's attempts is spent; it comes back in
      // a moment, and a restart of a few seconds cannot use up a task's retries before it even runs.
      return handBack(job, token, CLAIM_RETRY_MS);
    }
    switch (claim.outcome) {
      case "missing":
        throw new UnrecoverableError(`Task ${taskId} does not exist`);
      case "finished":
        // Cancelled while its job waited: the job ends as a cancelled attempt's does (completed, saying why), so the
        // queue dashboard shows it with the task's reason rather than as an ordinary completion.
        if (claim.task.state === "cancelled") throw new JobCancelledError(claim.task.failedReason ?? "Cancelled");
        return { outcome: "finished", result: claim.task.result };
      case "cancelled":
        throw new JobCancelledError(claim.reason);
      case "held":
        return handBack(job, token, claim.retryInMs);
      case "claimed":
        return claim;
    }
  }

  /**
   * claim: a waiting task, or an active one whose lease lapsed (its worker died), becomes active under a new lease of
   * this process; attemptsMade counts the attempt. A task asked to stop before it started ends cancelled here.
   */
  async claim(taskId: string): Promise<ClaimResult> {
    let token: string | undefined;
    try {
      const result = await this.claimRow(taskId, (t) => (token = t));
      if (result.outcome !== "claimed" && token) this.leases.running.delete(token);
      return result;
    } catch (error) {
      if (token) this.leases.running.delete(token);
      throw error;
    }
  }

  private async claimRow(taskId: string, tokenOf: (token: string) => void): Promise<ClaimResult> {
    return this.rows.claim(taskId, async (task, ops): Promise<ClaimResult> => {
      if (!task) return { outcome: "missing" };
      if (task.state !== "waiting" && task.state !== "active") return { outcome: "finished", task };
      // A live lease of this very process whose attempt it no longer runs (it failed while PostgreSQL was away, and
      // could not record it) holds nothing: taken over at once rather than after it lapses.
      const orphan =
        task.leaseOwner === this.owner && task.leaseToken !== null && !this.leases.running.has(task.leaseToken);
      if (task.state === "active" && !task.leaseLapsed && !orphan) {
        const left = task.leaseExpiresAt ? task.leaseExpiresAt.getTime() - Date.now() : this.leaseMs;
        return { outcome: "held", retryInMs: Math.max(100, Math.min(this.leaseMs, left)) };
      }
      if (task.cancelRequested) {
        const reason = cancellationReason(task);
        await ops.cancel(reason);
        return { outcome: "cancelled", task, reason };
      }
      const token = randomUUID();
      tokenOf(token);
      // Running from before the claim commits: a renewal in between must not take the attempt for an orphan.
      this.leases.running.set(token, { cancelSeen: false });
      const attempt = await ops.activate(this.owner, token, this.leaseMs);
      return { outcome: "claimed", task, lease: { taskId, token, attempt } };
    });
  }

  /**
   * progress: the holder replaces the task's progress with `update(stored)`, inside `client`'s transaction (the
   * step's own, so the work and its count commit together) or a short one of its own. Renews the lease. Throws
   * LeaseLostError, rolling the step back, when the attempt no longer holds the task.
   */
  async progress<P extends object>(
    lease: Lease,
    update: (stored: Record<string, unknown>) => P,
    client?: pg.ClientBase,
  ): Promise<P> {
    const run = async (c: pg.ClientBase): Promise<P> => {
      const next = await this.rows.writeProgress(c, lease, this.leaseMs, update);
      if (next === null) throw new LeaseLostError(lease.taskId);
      return next;
    };
    return client ? run(client) : this.rows.inTransaction(run);
  }

  /** Between steps: whether the task was asked to stop. Throws LeaseLostError when the attempt no longer holds it. */
  async checkpoint(lease: Lease): Promise<{ cancelRequested: boolean; task: TaskRow }> {
    const task = await this.rows.readHeld(lease);
    if (!task?.held) throw new LeaseLostError(lease.taskId);
    return { cancelRequested: task.cancelRequested, task };
  }

  /**
   * handBack: the holder, shutting down, puts the task back to waiting (saying so) and its job back in the queue at
   * once; throws BullMQ's DelayedError, which the handler lets through.
   */
  async handBack(lease: Lease, job: Job, jobToken: string | undefined): Promise<never> {
    this.release(lease);
    await this.rows.handBack(
      lease,
      `Attempt ${lease.attempt} was handed back by a worker shutting down; waiting for the next attempt`,
    );
    return handBack(job, jobToken, 0);
  }

  /**
   * retryWait (or fail, on the last attempt): a failed attempt is recorded by its holder; the task waits for the next
   * attempt, saying which failed and why, or ends failed when BullMQ will not retry (`final`); a task asked to stop
   * meanwhile ends cancelled instead. Never throws: PostgreSQL itself may be what failed. Then the ending is kept and
   * written by this process's next renewals once PostgreSQL answers (still fenced by the lease token: a claim that
   * took the task over first wins), and the attempt's lease, no longer renewed, lapses within leaseMs meanwhile.
   */
  async failAttempt(lease: Lease, error: unknown, final: boolean): Promise<void> {
    this.release(lease);
    if (error instanceof LeaseLostError) return;
    const message = failureText(error);
    const ending: Ending = {
      lease,
      final,
      reason: final ? message : `Attempt ${lease.attempt} failed, retrying: ${message}`,
    };
    await this.leases.settle(ending).catch((cause: unknown) => {
      this.leases.unrecorded.set(lease.token, ending);
      this.logger.warn({ taskId: lease.taskId, err: cause }, "could not record a failed attempt; retrying it");
    });
  }

  /** complete: the holder ends the task with its result. */
  async complete(lease: Lease, progress: object, result: unknown): Promise<void> {
    await this.end(lease, "completed", progress, null, result);
  }

  /** fail: the holder ends the task as failed (nothing a retry could change: a timeout, a deleted test, a limit). */
  async fail(lease: Lease, reason: string, progress?: object): Promise<void> {
    await this.end(lease, "failed", progress, reason);
  }

  /** cancel, by the holder between two steps, having found cancelRequested. */
  async cancel(lease: Lease, reason: string, progress?: object): Promise<void> {
    await this.end(lease, "cancelled", progress, reason);
  }

  private async end(
    lease: Lease,
    state: "completed" | "failed" | "cancelled",
    progress: object | undefined,
    failedReason: string | null,
    result?: unknown,
  ): Promise<void> {
    const held = await this.rows.end(lease, state, progress, failedReason, result);
    this.release(lease);
    if (!held) throw new LeaseLostError(lease.taskId);
  }

  /** giveUp: BullMQ failed the task's job without running it (it stalled too often); progress stays as committed. */
  async giveUp(taskId: string, reason: string): Promise<void> {
    await this.rows.giveUp(taskId, `Given up after its workers stopped during it too often: ${reason}`);
  }

  // ---- leases and reconciliation ---------------------------------------------------------------------------------

  /**
   * The attempt stopped running in this process (it ended, handed back, failed, or found itself fenced): its lease is
   * renewed no more. The methods that end an attempt call it; a handler calls it too, in a `finally`, so that an
   * attempt that escapes in any other way is never renewed again.
   */
  release(lease: Lease): void {
    this.leases.running.delete(lease.token);
  }

  /** Rows without a lease token that a job of this process is working on, renewed until `release()` (LeaseRenewal). */
  holdRows(taskIds: readonly string[]): { release(): void } {
    return this.leases.holdRows(taskIds);
  }

  /** One renewal of this process's leases (LeaseRenewal.renewLeases); returns how many it renewed. */
  renewLeases(): Promise<number> {
    return this.leases.renewLeases();
  }

  /** Renews this process's leases every third of the lease, until stopped (LeaseRenewal.keepLeases). */
  keepLeases(): { stop(): void } {
    return this.leases.keepLeases();
  }

  /**
   * reconcile, first half: active tasks whose lease lapsed wait again, saying so; those asked to stop end cancelled
   * (no attempt runs them to see it). Returns their ids.
   */
  async releaseLapsed(): Promise<string[]> {
    const rows = await this.rows.releaseLapsed();
    for (const task of rows.filter((t) => t.cancelRequested)) {
      await this.rows.cancelWaiting(task.id, cancellationReason(task));
    }
    return rows.map((r) => r.id);
  }

  /** Waiting tasks of a type (and request kind) older than `graceMs`: the reconciler checks that their jobs exist. */
  waitingOlderThan(type: TaskType, graceMs: number, kind?: string): Promise<TaskRow[]> {
    return this.rows.waitingOlderThan(type, graceMs, kind);
  }

  /** Ends a waiting task whose job vanished and cannot be queued again (a synchronous evaluation's). */
  failLost(taskId: string, reason: string): Promise<void> {
    return this.rows.failWaiting(taskId, reason);
  }
}
