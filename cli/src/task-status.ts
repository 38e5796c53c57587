import type { ActionAnswer, ActionRequest } from "./api-types";
import { counted, formatCount } from "./output";

/** getTaskStatus's answer (and each of listTasks' tasks). */
export type TaskStatus = ActionAnswer<"/operations?action=getTaskStatus">;

type TaskFilter = NonNullable<ActionRequest<"/operations?action=listTasks">>;
export const TASK_STATES = [
  "waiting",
  "active",
  "completed",
  "failed",
  "cancelled",
] as const satisfies readonly NonNullable<TaskFilter["state"]>[];
export const TASK_TYPES = ["TRUNCATE_TIMESERIES", "EVALUATE_TESTS"] as const satisfies readonly NonNullable<
  TaskFilter["type"]
>[];

export const isFinished = (state: string) => state === "completed" || state === "failed" || state === "cancelled";

/** How far a task got, whatever its type: rows deleted by a truncation, entities evaluated by runTest. */
export interface TaskMeasure {
  done: number;
  total: number;
  /** "rows" or "entities" */
  unit: string;
  /** "row" or "entity" */
  one: string;
  /** "deleted" or "evaluated" */
  verb: string;
}

export function measure(status: TaskStatus): TaskMeasure {
  const p = status.progress ?? {};
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  if ("evaluated" in p) {
    return { done: num(p.evaluated), total: num(p.total), unit: "entities", one: "entity", verb: "evaluated" };
  }
  return { done: num(p.deleted), total: num(p.toDelete), unit: "rows", one: "row", verb: "deleted" };
}

/** `1,200 of 5,000 rows deleted (24%)`, or `no rows to delete` once a task found nothing. */
export function describeProgress(status: TaskStatus): string {
  const { done, total, unit, one, verb } = measure(status);
  if (total === 0 && done === 0) return status.state === "waiting" ? "not started" : `0 ${unit} ${verb}`;
  const percent = total > 0 ? ` (${Math.floor((Math.min(done, total) / total) * 100)}%)` : "";
  return `${formatCount(done)} of ${counted(total, one, unit)} ${verb}${percent}`;
}

/** A completed truncation's result in words: rows, partitions and the bytes freed; undefined for anything else. */
export function describeResult(status: TaskStatus): string | undefined {
  const r = status.result as { deleted?: unknown; partitionsDropped?: unknown; bytesFreed?: unknown } | null;
  if (status.type !== "TRUNCATE_TIMESERIES" || !r || typeof r.bytesFreed !== "number") return undefined;
  const n = (v: unknown) => (typeof v === "number" ? v : 0);
  return (
    `${counted(n(r.deleted), "row")} deleted, ${counted(n(r.partitionsDropped), "partition")} dropped, ` +
    `${counted(n(r.bytesFreed), "byte")} freed`
  );
}
