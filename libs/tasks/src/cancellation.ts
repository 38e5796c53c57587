/**
 * What a cancelled task's failedReason says. A task can be cancelled while it waits after it has started: an attempt
 * failed and it waits for the next one, or its worker handed it back on shutdown. Its earlier attempts may have
 * deleted rows or pushed results by then, so it says how far it got, as a task stopped while active does.
 */
export function cancellationReason(task: {
  type: string;
  startedAt: Date | null;
  progress: unknown;
  request: unknown;
}): string {
  if (task.startedAt === null) return "Cancelled before it started";
  const progress = (task.progress ?? {}) as { deleted?: number; evaluated?: number };
  if (task.type === "TRUNCATE_TIMESERIES") {
    return `Cancelled; ${progress.deleted ?? 0} rows were deleted before the cancellation`;
  }
  if ((task.request as { kind?: string } | null)?.kind === "runTest") {
    return `Cancelled; ${progress.evaluated ?? 0} entities were evaluated`;
  }
  return "Cancelled before its results were pushed"; // an evaluation pushes all its results at once, or none
}
