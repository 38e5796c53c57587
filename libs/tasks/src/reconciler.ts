import type { Logger } from "@mdp/core";
import type { TaskLifecycle, TaskRow, TaskType } from "./lifecycle";
import { failureText } from "./task-status";

/** One kind of task a reconciler looks after: how to tell its job exists, and what to do when it does not. */
export interface ReconciledKind {
  type: TaskType;
  /** the request's `kind`, where a type has several (EVALUATE_TESTS: runTest, evaluate) */
  kind?: string;
  jobExists: (taskId: string) => Promise<boolean>;
  /**
   * BullMQ's reason, when the task's job failed for good (its last attempt failed, or it was given up): no attempt
   * will come. A waiting task with such a job is one whose ending was never written (its worker died, or PostgreSQL
   * was away, when it failed), and it ends failed with that reason.
   */
  failedReason?: (taskId: string) => Promise<string | undefined>;
  /** queues the task's job again (job id = task id), or ends the task when it cannot be run again */
  requeue: (task: TaskRow) => Promise<void>;
}

export const RECONCILE_INTERVAL_MS = 15_000;
/** A row younger than this may be one whose job its gateway is queueing right now. */
export const RECONCILE_GRACE_MS = 5_000;

/**
 * reconcile: each worker process at its start, then once per cluster every RECONCILE_INTERVAL_MS (the worker's
 * `reconcile-tasks` chore, a BullMQ job scheduler: one worker of the kind runs each firing), (1) moves active tasks whose lease lapsed back to waiting,
 * (2) queues again the waiting tasks of its kinds whose job vanished from Redis (a restart without persistence), and
 * (3) ends failed those whose job failed for good without the task's row being told.
 * Adding a job id that exists is a no-op and a claim resumes from the row, so doing this twice is harmless.
 */
export class TaskReconciler {
  constructor(
    private readonly tasks: TaskLifecycle,
    private readonly kinds: readonly ReconciledKind[],
    private readonly logger: Logger,
    private readonly options: { intervalMs?: number; graceMs?: number } = {},
  ) {}

  /** One reconcile, counted: what a run of the `reconcile-tasks` chore reports. */
  async reconcileCounted(): Promise<{ released: number; requeued: number; failed: number }> {
    const { released, requeued, failed } = await this.reconcile();
    return { released: released.length, requeued: requeued.length, failed: failed.length };
  }

  /** Returns the ids of the tasks whose lease it released, of those it queued again, and of those it ended failed. */
  async reconcile(): Promise<{ released: string[]; requeued: string[]; failed: string[] }> {
    const released = await this.tasks.releaseLapsed();
    for (const taskId of released) this.logger.warn({ taskId }, "a task's worker stopped renewing its lease");
    const requeued: string[] = [];
    const failed: string[] = [];
    for (const kind of this.kinds) {
      for (const task of await this.tasks.waitingOlderThan(
        kind.type,
        this.options.graceMs ?? RECONCILE_GRACE_MS,
        kind.kind,
      )) {
        const reason = await kind.failedReason?.(task.id);
        if (reason !== undefined) {
          await this.tasks.failLost(task.id, failureText(reason));
          failed.push(task.id);
          this.logger.warn({ taskId: task.id }, "ended a waiting task whose job had failed for good");
          continue;
        }
        if (await kind.jobExists(task.id)) continue;
        await kind.requeue(task);
        requeued.push(task.id);
        this.logger.warn({ taskId: task.id }, "re-queued a task whose job had vanished from Redis");
      }
    }
    return { released, requeued, failed };
  }
}
