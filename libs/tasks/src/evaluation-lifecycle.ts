import type { Job } from "bullmq";
import { isLastAttempt } from "@mdp/queues";
import {
  EvaluationTaskRows,
  type EvaluationProgress,
  type EvaluationRow,
  type LeaseHolder,
  type Queryable,
  type StoredAnswer,
} from "@mdp/db";

/** An evaluation's row as its transitions write it: everything but the state, which the transition decides. */
export type EvaluationRecord = Omit<EvaluationRow, "state" | "result" | "failedReason" | "reply">;

/** How a synchronous evaluation ended: its results, or the refusal its caller was answered with (a 4xx). */
export type EvaluationEnding = EvaluationRecord &
  ({ result: unknown; refusal?: undefined } | { refusal: string }) & {
    /** the answer sent to the waiting gateway, kept when it may not have reached it (storedAnswers) */
    reply?: unknown;
  };

/** A failed attempt of an evaluate job: whether it was the job's last, and what its rows say. */
export interface FailedEvaluationAttempt {
  final: boolean;
  failedReason: string;
}

/** The row the gateway writes for a request (it has not run): what was asked, by whom, how many entities. */
export interface EvaluationRequestRow {
  taskId: string;
  request: unknown;
  progress: EvaluationProgress;
  createdBy: string;
}

/**
 * The transitions of synchronous evaluations' task rows (POST /gms/test?action=evaluate): the same state machine as
 * every task (states.ts), decided here, written by @mdp/db's EvaluationTaskRows. One evaluate job carries many requests,
 * each its own task, so these rows are claimed by the job (in its one read, or before a push), not one by one through
 * the runner. A row exists only where a caller can have been given its task id, which only a 504 hands out.
 *
 *   gateway:  timedOut (→ waiting) · failedUnrun (→ failed) · failUnanswered (waiting → failed)
 *   worker:   claim in the job's read (startedCte: waiting → active) · claimForPush (→ active, or → cancelled)
 *             · end (→ completed, or failed with the refusal) · failAttempt (→ waiting for BullMQ's retry, or failed)
 */
export class EvaluationLifecycle {
  private readonly rows: EvaluationTaskRows;

  constructor(db: Queryable, lease: LeaseHolder) {
    this.rows = new EvaluationTaskRows(db, lease);
  }

  // ---- gateway ---------------------------------------------------------------------------------------------------

  /** timedOut: the caller is answered 504 with the task id; its row waits for the worker, unless the worker wrote it. */
  timedOut(row: EvaluationRequestRow): Promise<void> {
    return this.rows.insertWaiting(row);
  }

  /** failedUnrun: the request failed for good before a worker could write its row; the caller gets the task id. */
  failedUnrun(row: EvaluationRequestRow, failedReason: string): Promise<void> {
    return this.rows.insertFailed({ ...row, failedReason });
  }

  /** failUnanswered: a waiting row whose job ended without completing it (its answer was lost) ends failed. */
  failUnanswered(taskId: string, failedReason: string): Promise<void> {
    return this.rows.failWaiting(taskId, failedReason);
  }

  /** The ended rows among `taskIds` (one statement): a gateway answers callers whose reply went missing from them. */
  storedAnswers(taskIds: readonly string[]): Promise<StoredAnswer[]> {
    return this.rows.storedAnswers(taskIds);
  }

  // ---- worker ----------------------------------------------------------------------------------------------------

  /** claim, embedded in the job's one read: the waiting rows of its requests become active under this lease. */
  startedCte(params: { ids: string; owner: string; leaseMs: string }): string {
    return this.rows.startedCte(params);
  }

  /** The owner and lease startedCte's parameters take. */
  leaseValues(): [string, number] {
    return this.rows.leaseValues();
  }

  /**
   * claimForPush, in its own short transaction (`client`'s) before the push: the rows become active under this lease;
   * returned are the tasks that must not push (cancelled or asked to stop), which end cancelled here.
   */
  claimForPush(client: Queryable, rows: readonly EvaluationRecord[]): Promise<Set<string>> {
    return this.rows.claimForPush(client, rows);
  }

  /** end: each evaluation completes with its results, or fails with the refusal its caller was answered with. */
  end(endings: readonly EvaluationEnding[]): Promise<void> {
    return this.rows.write(
      endings.map(({ refusal, ...row }) =>
        refusal === undefined
          ? { ...row, state: "completed" }
          : { ...row, state: "failed", result: undefined, failedReason: refusal },
      ),
    );
  }

  /**
   * What an attempt of `job` that failed with `error` means for its rows: a retry to wait for, or the end. The
   * reason keeps the error's own words: a waiting gateway reads an outage from them (a 503 with Retry-After).
   */
  failedAttempt(job: Pick<Job, "attemptsMade" | "opts">, error: unknown): FailedEvaluationAttempt {
    const final = isLastAttempt(job);
    const message = error instanceof Error ? error.message : String(error);
    return { final, failedReason: final ? message : `Attempt ${job.attemptsMade + 1} failed, retrying: ${message}` };
  }

  /** failAttempt (retryWait or fail): the rows wait for BullMQ's retry, or, on the job's last attempt, end failed. */
  failAttempt(rows: readonly EvaluationRecord[], attempt: FailedEvaluationAttempt): Promise<void> {
    return this.rows.write(
      rows.map((row) => ({ ...row, state: attempt.final ? "failed" : "waiting", failedReason: attempt.failedReason })),
    );
  }

  /** Deletes up to `limit` ended evaluation rows older than `maxAgeHours` (one statement); returns how many went. */
  pruneFinishedBatch(maxAgeHours: number, limit: number): Promise<number> {
    return this.rows.pruneFinishedBatch(maxAgeHours, limit);
  }
}
