import {
  AppError,
  forbidden,
  notFound,
  refuseUnstorable,
  requireIdLength,
  unavailableDependency,
  serviceUnavailable,
  type Logger,
} from "@mdp/core";
import { cancellationReason, type Database, type Task } from "@mdp/db";
import type { Producer } from "@mdp/queues";
import type { Actor } from "../auth/actor";
import type { PolicyEngine } from "../policies/policy-engine";
import type { Privilege } from "../policies/privileges";

/** getTaskStatus's answer: the durable task row, which outlives the job's removal from Redis. */
export interface TaskStatus {
  taskId: string;
  type: string;
  state: string;
  progress: Record<string, unknown>;
  request: unknown;
  result: unknown;
  failedReason: string | null;
  attemptsMade: number;
  cancelRequested: boolean;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

const CANCEL_PRIVILEGE: Record<Task["type"], Privilege> = {
  TRUNCATE_TIMESERIES: "TRUNCATE_TIMESERIES_INDEX",
  EVALUATE_TESTS: "MANAGE_TESTS",
};

export function statusOf(task: Task): TaskStatus {
  return {
    taskId: task.id,
    type: task.type,
    state: task.state,
    progress: task.progress as Record<string, unknown>,
    request: task.request,
    result: task.result,
    failedReason: task.failedReason,
    attemptsMade: task.attemptsMade,
    cancelRequested: task.cancelRequested,
    createdAt: task.createdAt.getTime(),
    startedAt: task.startedAt?.getTime() ?? null,
    finishedAt: task.finishedAt?.getTime() ?? null,
  };
}

/**
 * Queues the job of the task row a request has just written (the job id is the task id). When that fails the row is
 * ended as failed, saying why ("Could not be queued: Redis is unavailable"), so that getTaskStatus tells the truth
 * instead of `waiting` for a job that does not exist; the caller gets the shared outage answer (503, Retry-After,
 * which server) with the task id, or the error as it is. A row that a worker already took (the job reached Redis but
 * its reply did not) is left to the worker. A row written by an earlier request (`wroteRow` false) stays waiting: its
 * caller holds its id, and an identical request, or the truncation worker's reconciler, queues it again.
 */
export async function enqueueTask(
  db: Database,
  logger: Logger,
  task: { id: string; what: string; wroteRow: boolean },
  enqueue: () => Promise<unknown>,
): Promise<void> {
  try {
    await enqueue();
  } catch (error) {
    const which = unavailableDependency(error);
    logger.error({ taskId: task.id, err: error }, `could not queue ${task.what}`);
    if (!task.wroteRow) throw which ? serviceUnavailable(which) : error;
    const reason = which ? `Could not be queued: ${which} is unavailable.` : "Could not be queued: internal error.";
    const ended = await db.prisma.task
      .updateMany({
        where: { id: task.id, state: "waiting" },
        data: { state: "failed", failedReason: reason, finishedAt: new Date() },
      })
      .then(
        () => true,
        (markError: unknown) => {
          // PostgreSQL gone as well: the row stays waiting, which an identical request (or the reconciler) picks up.
          logger.error({ taskId: task.id, err: markError }, `could not mark ${task.what} as failed`);
          return false;
        },
      );
    throw which ? serviceUnavailable(which, ended ? { taskId: task.id } : {}) : error;
  }
}

/** Following and cancelling asynchronous tasks (getTaskStatus, cancelTask). */
export class TaskService {
  constructor(
    private readonly db: Database,
    private readonly engine: PolicyEngine,
    private readonly producers: Array<Producer<"truncate"> | Producer<"evaluate">>,
    private readonly logger: Logger,
  ) {}

  async status(actor: Actor, taskId: string): Promise<TaskStatus> {
    await this.engine.require(actor, "GET_TASK_STATUS", "get task status");
    return statusOf(await this.find(taskId));
  }

  /**
   * A waiting task is taken off the queue and cancelled at once; an active one is asked to stop, which its worker
   * does between two batches (the answer then still says active, with cancelRequested).
   */
  async cancel(actor: Actor, taskId: string): Promise<TaskStatus> {
    const task = await this.cancellable(actor, taskId);
    if (task.state !== "waiting" && task.state !== "active") {
      throw new AppError("CONFLICT", `Task ${taskId} is already ${task.state}`);
    }
    const { prisma } = this.db;
    await prisma.task.update({ where: { id: taskId }, data: { cancelRequested: true } });
    if (task.state === "waiting" && (await this.removeWaitingJob(taskId))) {
      await prisma.task.updateMany({
        where: { id: taskId, state: "waiting" },
        data: { state: "cancelled", finishedAt: new Date(), failedReason: cancellationReason(task) },
      });
    }
    return statusOf(await this.find(taskId));
  }

  /**
   * The task, once the actor may cancel it. The privilege is checked before the answer can depend on whether the task
   * exists: a caller who may cancel no task is refused before the lookup; one who may cancel some types but not this
   * one's gets the same refusal for it as for an unknown id, unless GET_TASK_STATUS lets it see every task anyway.
   */
  private async cancellable(actor: Actor, taskId: string): Promise<Task> {
    const held = await this.engine.privilegesOf(actor.urn);
    const refusal = forbidden(`${actor.urn} is unauthorized to cancel this task.`);
    const mayCancel = (type: Task["type"]) => held.has(CANCEL_PRIVILEGE[type]);
    const types = Object.keys(CANCEL_PRIVILEGE) as Array<Task["type"]>;
    if (!types.some(mayCancel)) throw refusal;
    const seesEveryTask = held.has("GET_TASK_STATUS") || types.every(mayCancel);
    let task: Task;
    try {
      task = await this.find(taskId);
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_FOUND" && !seesEveryTask) throw refusal;
      throw error;
    }
    if (!mayCancel(task.type)) throw refusal;
    return task;
  }

  private async removeWaitingJob(taskId: string): Promise<boolean> {
    for (const producer of this.producers) {
      const job = await producer.queue.getJob(taskId);
      if (!job) continue;
      try {
        await job.remove(); // refuses a job a worker holds the lock of
        return true;
      } catch (error) {
        this.logger.info(
          { taskId, err: (error as Error).message },
          "job already taken by a worker; it will stop itself",
        );
        return false;
      }
    }
    return true; // no job: nothing will run it
  }

  private async find(taskId: string): Promise<Task> {
    requireIdLength("taskId", taskId);
    refuseUnstorable(taskId, "taskId");
    const task = await this.db.prisma.task.findUnique({ where: { id: taskId } });
    if (!task) throw notFound(`Task ${taskId} does not exist`);
    return task;
  }
}
