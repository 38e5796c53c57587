import { z } from "zod";
import {
  AppError,
  forbidden,
  makeUrn,
  notFound,
  parseUrnField,
  refuseUnstorable,
  requireIdLength,
  type Logger,
} from "@mdp/core";
import { type Database, type Prisma, replicaReads } from "@mdp/db";
import { RESULT_LIMITS, storedResultsWithoutValues } from "@mdp/metadata-tests";
import type { Producer } from "@mdp/queues";
import { presentState, TaskLifecycle, type TaskRow, type TaskState, type TaskType } from "@mdp/tasks";
import { recordAudit } from "../audit/audit.service";
import type { Actor } from "../auth/actor";
import type { PolicyEngine } from "../policies/policy-engine";
import type { Privilege } from "../policies/privileges";

/** getTaskStatus's answer: the durable task row, which outlives the job's removal from Redis. */
export interface TaskStatus {
  taskId: string;
  type: string;
  state: TaskState;
  progress: Record<string, unknown>;
  request: unknown;
  result: unknown;
  failedReason: string | null;
  attemptsMade: number;
  cancelRequested: boolean;
  /** the pace asked for (a truncation's rows per second; rethrottleTask), null: as fast as it goes */
  rowsPerSecond: number | null;
  /** the urn of the user who asked for it */
  createdBy: string;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

const CANCEL_PRIVILEGE: Record<TaskType, Privilege> = {
  TRUNCATE_TIMESERIES: "TRUNCATE_TIMESERIES_INDEX",
  EVALUATE_TESTS: "MANAGE_TESTS",
};

/** The task types that can be paced (rethrottleTask): those whose definition declares a pace. */
const THROTTLED: ReadonlySet<TaskType> = new Set(["TRUNCATE_TIMESERIES"]);

/** listTasks pages at most this many tasks, and starts at most this far in (filter by time to go further back). */
export const MAX_TASKS_PER_PAGE = 100;
export const MAX_TASKS_START = 10_000;

const epochMillis = (field: string) =>
  z
    .number({ error: `must be a whole number of epoch milliseconds (${field})` })
    .int({ error: `must be a whole number of epoch milliseconds (${field})` })
    .nonnegative({ error: "must be 0 or more" });

/** listTasks' request (HTTP body and GraphQL input alike): strict, every size bounded. */
export const listTasksRequest = z.strictObject({
  type: z
    .enum(["TRUNCATE_TIMESERIES", "EVALUATE_TESTS"], { error: "must be TRUNCATE_TIMESERIES or EVALUATE_TESTS" })
    .optional(),
  state: z
    .enum(["waiting", "active", "completed", "failed", "cancelled"], {
      error: "must be one of waiting, active, completed, failed, cancelled",
    })
    .optional(),
  createdBy: z.string({ error: "must be a corpuser urn" }).optional(),
  createdAfter: epochMillis("inclusive").optional(),
  createdBefore: epochMillis("exclusive").optional(),
  start: z
    .number({ error: `must be a whole number from 0 to ${MAX_TASKS_START}` })
    .int({ error: `must be a whole number from 0 to ${MAX_TASKS_START}` })
    .min(0, { error: `must be a whole number from 0 to ${MAX_TASKS_START}` })
    .max(MAX_TASKS_START, {
      error: `must be at most ${MAX_TASKS_START} (page further back with createdBefore)`,
    })
    .default(0),
  count: z
    .number({ error: `must be a whole number from 1 to ${MAX_TASKS_PER_PAGE}` })
    .int({ error: `must be a whole number from 1 to ${MAX_TASKS_PER_PAGE}` })
    .min(1, { error: `must be a whole number from 1 to ${MAX_TASKS_PER_PAGE}` })
    .max(MAX_TASKS_PER_PAGE, { error: `must be at most ${MAX_TASKS_PER_PAGE} (tasks one page holds)` })
    .default(20),
});

export interface TaskList {
  start: number;
  count: number;
  total: number;
  /** newest first */
  tasks: TaskStatus[];
}

/** The urn audit rows name a task by (its target). */
export const taskUrn = (namespace: string, taskId: string): string => makeUrn(namespace, "task", taskId);

/**
 * What a task row says, truthfully at this moment: an active task whose worker stopped renewing its lease reads as
 * waiting for its next attempt (`presentState` of @mdp/tasks).
 */
export function statusOf(task: TaskRow): TaskStatus {
  const { state, failedReason } = presentState(task);
  return {
    taskId: task.id,
    type: task.type,
    state,
    progress: task.progress,
    request: task.request,
    result: task.result,
    failedReason,
    attemptsMade: task.attemptsMade,
    cancelRequested: task.cancelRequested,
    rowsPerSecond: task.rowsPerSecond,
    createdBy: task.createdBy,
    createdAt: task.createdAt.getTime(),
    startedAt: task.startedAt?.getTime() ?? null,
    finishedAt: task.finishedAt?.getTime() ?? null,
  };
}

/** Following and cancelling asynchronous tasks (getTaskStatus, cancelTask). */
export class TaskService {
  private readonly tasks: TaskLifecycle;

  constructor(
    private readonly db: Database,
    private readonly engine: PolicyEngine,
    private readonly producers: Array<Producer<"truncate"> | Producer<"evaluate">>,
    private readonly logger: Logger,
    private readonly urnNamespace: string,
  ) {
    this.tasks = new TaskLifecycle(db, logger);
  }

  /** A task's status, for a caller its edge checked for GET_TASK_STATUS. */
  async status(actor: Actor, taskId: string): Promise<TaskStatus> {
    const [status] = await this.readable(actor, [statusOf(await this.find(taskId))]);
    return status!;
  }

  /**
   * listTasks: tasks newest first, filtered by type, state (as status shows it), creator and creation time; for a
   * caller its edge checked for GET_TASK_STATUS, with the input its edge parsed.
   */
  async list(actor: Actor, input: z.output<typeof listTasksRequest>): Promise<TaskList> {
    const { start, count, ...filter } = input;
    // A mistyped user would otherwise list nothing, which reads as "they started no task".
    if (filter.createdBy !== undefined) parseUrnField("createdBy", filter.createdBy, "corpuser");
    const page = await replicaReads.listTasks(this.db.stale, filter, { start, count });
    return { ...page, tasks: withinAnswerLimit(await this.readable(actor, page.tasks.map(statusOf))) };
  }

  /**
   * Tasks as this caller may read them: an evaluation's results show the values its failed rules found only to a
   * holder of GET_ENTITY (the cached privileges; GET_TASK_STATUS alone reads no entity), whoever asked for it.
   */
  private async readable(actor: Actor, tasks: TaskStatus[]): Promise<TaskStatus[]> {
    const withResults = (task: TaskStatus) => task.type === "EVALUATE_TESTS" && task.result !== null;
    if (!tasks.some(withResults) || (await this.engine.has(actor, "GET_ENTITY"))) return tasks;
    return tasks.map((task) =>
      withResults(task) ? { ...task, result: storedResultsWithoutValues(task.result) } : task,
    );
  }

  /**
   * A waiting task is cancelled at once (its job kept for the dashboard, a worker ends it); an active one is asked to
   * stop, which its worker does between two batches (the answer then still says active, with cancelRequested).
   */
  async cancel(actor: Actor, taskId: string): Promise<TaskStatus> {
    const task = await this.cancellable(actor, taskId, "cancel");
    if (task.state !== "waiting" && task.state !== "active") {
      throw new AppError("CONFLICT", `Task ${taskId} is already ${task.state}`);
    }
    // Asked already, and its worker still holds it: asking again changes nothing, so it records nothing either (each
    // repeat would otherwise add an audit row).
    if (task.state === "active" && task.cancelRequested && !task.leaseLapsed) return statusOf(task);
    const after = await this.tasks.requestCancel(
      taskId,
      () => this.releaseCancelledJob(taskId),
      // The request and its audit row commit together; a task that finished meanwhile gets neither.
      (tx, row) =>
        recordAudit(tx, actor, "task.cancel", taskUrn(this.urnNamespace, taskId), { type: row.type, state: row.state }),
    );
    if (!after) throw new AppError("CONFLICT", `Task ${taskId} is already ${(await this.find(taskId)).state}`);
    const [status] = await this.readable(actor, [statusOf(after)]);
    return status!;
  }

  /**
   * rethrottleTask: a waiting or running truncation's pace, by whoever may cancel it (the same privilege); null
   * removes the throttle. Its worker keeps the new pace from its next checkpoint (within a second while it waits).
   */
  async rethrottle(actor: Actor, taskId: string, rowsPerSecond: number | null): Promise<TaskStatus> {
    const task = await this.cancellable(actor, taskId, "rethrottle");
    if (!THROTTLED.has(task.type)) {
      throw new AppError("CONFLICT", `Task ${taskId} is a ${task.type} task; only truncations can be rethrottled`);
    }
    if (task.state !== "waiting" && task.state !== "active") {
      throw new AppError("CONFLICT", `Task ${taskId} is already ${task.state}`);
    }
    const after = await this.tasks.rethrottle(taskId, rowsPerSecond, (tx, row) =>
      recordAudit(tx, actor, "task.rethrottle", taskUrn(this.urnNamespace, taskId), {
        type: row.type,
        from: task.rowsPerSecond,
        to: rowsPerSecond,
      }),
    );
    if (!after) throw new AppError("CONFLICT", `Task ${taskId} is already ${(await this.find(taskId)).state}`);
    return statusOf(after);
  }

  /**
   * Asks every waiting or active task `createdBy` created to stop, in the caller's transaction, each with its
   * `task.cancel` audit row (`bulk`); answers them, oldest first. After the commit, `settleCancelled` takes the waiting
   * ones off the queue at once; running ones stop at their worker's next checkpoint.
   */
  async cancelAllCreatedBy(tx: Prisma.TransactionClient, actor: Actor, createdBy: string): Promise<TaskRow[]> {
    const rows = await this.tasks.requestCancelAllIn(tx, createdBy);
    for (const row of rows) {
      await recordAudit(tx, actor, "task.cancel", taskUrn(this.urnNamespace, row.id), {
        type: row.type,
        state: row.state,
        bulk: true,
      });
    }
    return rows;
  }

  /** The tasks of these ids that exist (delegatedWork, revokeActorAccess's answer). */
  readMany(taskIds: readonly string[]): Promise<TaskRow[]> {
    return this.tasks.readMany(taskIds);
  }

  /** The second half of cancelAllCreatedBy, once its transaction committed; never fails (a worker stops the rest). */
  async settleCancelled(rows: readonly TaskRow[]): Promise<void> {
    for (const row of rows) {
      await this.tasks
        .settleCancel(row, () => this.releaseCancelledJob(row.id))
        .catch((error: unknown) => {
          this.logger.warn({ taskId: row.id, err: (error as Error).message }, "could not end a cancelled task now");
        });
    }
  }

  /**
   * The task, once the actor may cancel it. The privilege is checked before the answer can depend on whether the task
   * exists: a caller who may cancel no task is refused before the lookup; one who may cancel some types but not this
   * one's gets the same refusal for it as for an unknown id, unless GET_TASK_STATUS lets it see every task anyway.
   */
  private async cancellable(actor: Actor, taskId: string, verb: "cancel" | "rethrottle"): Promise<TaskRow> {
    const held = await this.engine.privilegesOf(actor);
    const refusal = forbidden(`${actor.urn} is unauthorized to ${verb} this task.`);
    const mayCancel = (type: TaskType) => held.has(CANCEL_PRIVILEGE[type]);
    const types = Object.keys(CANCEL_PRIVILEGE) as TaskType[];
    if (!types.some(mayCancel)) throw refusal;
    const seesEveryTask = held.has("GET_TASK_STATUS") || types.every(mayCancel);
    let task: TaskRow;
    try {
      task = await this.find(taskId);
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_FOUND" && !seesEveryTask) throw refusal;
      throw error;
    }
    if (!mayCancel(task.type)) throw refusal;
    return task;
  }

  /**
   * A cancelled task's job, kept for the queue dashboard: a worker's claim finds the task cancelled and ends the job
   * completed, its value `{cancelled: true, reason}` (docs/queue-dashboard.md). One delayed (a retry's backoff, an
   * attempt handed back) is promoted so that a worker ends it now rather than when its delay runs out.
   */
  private async releaseCancelledJob(taskId: string): Promise<boolean> {
    for (const producer of this.producers) {
      const job = await producer.getJob(taskId);
      if (!job) continue;
      if (await job.isDelayed()) await job.promote();
      return true;
    }
    return false; // no job: nothing to show
  }

  private async find(taskId: string): Promise<TaskRow> {
    requireIdLength("taskId", taskId);
    refuseUnstorable(taskId, "taskId");
    const task = await this.tasks.read(taskId);
    if (!task) throw notFound(`Task ${taskId} does not exist`);
    return task;
  }
}

/**
 * A listTasks page within RESULT_LIMITS.answerBytes of results: each evaluation's result is bounded by it alone, so a
 * page of 100 could carry 100 times that. Past it, the later tasks' results are replaced by a note saying where to
 * read them (getTaskStatus answers one task's whole result).
 */
function withinAnswerLimit(tasks: TaskStatus[]): TaskStatus[] {
  let bytes = 0;
  return tasks.map((task) => {
    if (task.result === null || task.result === undefined) return task;
    const json = JSON.stringify(task.result);
    bytes += Buffer.byteLength(json, "utf8");
    if (bytes <= RESULT_LIMITS.answerBytes) return task;
    return {
      ...task,
      result: {
        omitted:
          `This page's results passed the limit of ${RESULT_LIMITS.answerBytes} bytes per answer; ` +
          `getTaskStatus ${task.taskId} shows this one.`,
      },
    };
  });
}
