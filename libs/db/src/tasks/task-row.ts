import type { TaskState, TaskType } from "../generated/prisma/client";

/** The task table's row and hold as `TaskRepository` and its callers exchange them. */

/** The task row as the lifecycle reads it, with whether an active task's lease has lapsed (by PostgreSQL's clock). */
export interface TaskRow {
  id: string;
  type: TaskType;
  state: TaskState;
  request: unknown;
  dedupKey: string | null;
  progress: Record<string, unknown>;
  result: unknown;
  failedReason: string | null;
  attemptsMade: number;
  cancelRequested: boolean;
  createdBy: string;
  /** the access token its creator used; null: none (the system client, a schedule's firing) */
  createdVia: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** active, but its worker has not renewed the lease in time (dead, hung, or cut off from PostgreSQL) */
  leaseLapsed: boolean;
  /** the pace asked for (rows per second; a truncation's throttle), null: as fast as it goes */
  rowsPerSecond: number | null;
}

/** An attempt's hold on a task, as the statements match it: the task and the attempt's lease token. */
export interface HeldTask {
  taskId: string;
  token: string;
}

export interface NewTask {
  type: TaskType;
  request: unknown;
  /** identical requests share one task while it is waiting or active and not being cancelled */
  dedupKey?: string;
  progress: Record<string, unknown>;
  createdBy: string;
  /**
   * the access token its creator used (task.created_via), so that what a token set in motion can be found and stopped;
   * absent for the system client and for a schedule's firing (which acts for its owner, not through a token)
   */
  createdVia?: string | null;
  /** the pace to start at (a truncation's throttle, rows per second); absent or null: unthrottled */
  rowsPerSecond?: number | null;
}

/** What a claim does with the row it locked (TaskLifecycle decides). */
export interface ClaimOps {
  cancel(reason: string): Promise<void>;
  /** active under a new lease of `owner`; answers the attempt's number */
  activate(owner: string, token: string, leaseMs: number): Promise<number>;
}
