import { z } from "zod";
import { badInput } from "@mdp/core";
import type { Actor } from "../auth/actor";
import type { TaskService, TaskStatus } from "./task.service";

/**
 * DataHub's getEsTaskStatus request: `task` ("<nodeId>:<taskId>" there), or `nodeId` and `taskId` apart. Here a task
 * is named by the id truncateTimeseriesAspect answered, which has no node, so only `task` can name one; the other two
 * are accepted as fields (DataHub's clients may send them) and refused with what to send instead.
 */
export const esTaskStatusRequest = z.strictObject({
  task: z.string({ error: "must be a string: the taskId truncateTimeseriesAspect answered" }).min(1).optional(),
  nodeId: z.string({ error: "must be a string" }).optional(),
  taskId: z.number({ error: "must be a whole number" }).int({ error: "must be a whole number" }).optional(),
});

const FINISHED = new Set(["completed", "failed", "cancelled"]);

/**
 * getEsTaskStatus (its route checked the privilege, then parsed the body): DataHub's answer, a JSON text in `value` ({completed, taskId, status, runTimeNanos}), for a task of
 * this service; `status` is what getTaskStatus answers. Same privilege (GET_TASK_STATUS, DataHub's
 * GET_ES_TASK_STATUS_PRIVILEGE) and same 404 for an unknown id: DataHub's `{"error": ...}` with 200 would read as an
 * answer.
 */
export async function esTaskStatus(
  tasks: TaskService,
  actor: Actor,
  request: z.output<typeof esTaskStatusRequest>,
): Promise<string> {
  if (request.task === undefined) {
    const given = request.nodeId !== undefined || request.taskId !== undefined;
    throw badInput(
      given
        ? "nodeId and taskId name an Elasticsearch task; this service's tasks have no node: pass task, the taskId truncateTimeseriesAspect answered"
        : "task is required: the taskId truncateTimeseriesAspect answered",
    );
  }
  const status: TaskStatus = await tasks.status(actor, request.task); // its action checked GET_TASK_STATUS
  const runTimeMs = status.startedAt === null ? 0 : (status.finishedAt ?? Date.now()) - status.startedAt;
  return JSON.stringify({
    completed: FINISHED.has(status.state),
    taskId: status.taskId,
    status,
    runTimeNanos: runTimeMs * 1_000_000,
  });
}
