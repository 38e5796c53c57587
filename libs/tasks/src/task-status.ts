import { unavailableDependency } from "@mdp/core";
import type { TaskRow } from "@mdp/db";
import type { TaskState } from "./states";

/**
 * What getTaskStatus shows: the row's state, except that an active task whose lease lapsed is waiting (its worker is
 * gone; the reconciler or BullMQ's stall check gives it its next attempt), saying so.
 */
export function presentState(task: TaskRow): { state: TaskState; failedReason: string | null } {
  if (task.state === "active" && task.leaseLapsed) {
    return { state: "waiting", failedReason: lapsedReason(task.attemptsMade) };
  }
  return { state: task.state, failedReason: task.failedReason };
}

function lapsedReason(attempt: number): string {
  return `Attempt ${attempt} stopped: its worker stopped responding; waiting for the next attempt`;
}

/**
 * What a task's status says of an attempt that failed with `error` (an Error, or the reason BullMQ kept): an outage
 * in our words, never the driver's ("Connection terminated unexpectedly", a reset connection); anything else as it is.
 */
export function failureText(error: unknown): string {
  const away = unavailableDependency(error);
  if (away) return `${away} was unavailable for longer than the attempt could wait`;
  return error instanceof Error ? error.message : String(error);
}
