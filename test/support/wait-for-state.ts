/**
 * Waiting for a task to reach a state, for every tier of tests: whatever reads the task's status (the gateway's
 * getTaskStatus, or the task row a worker-level test reads), polled until its state is one of those named.
 */
import { eventually } from "@mdp/core/testing";

/**
 * Resolves to the task's status once its `state` is one of `states`, asking `status` every poll of `eventually`
 * (20 ms) for at most `timeoutMs`; throws, naming the task, the states and the last status seen, when it is not.
 */
export function waitForState<T extends { state: string }>(
  status: (taskId: string) => Promise<T>,
  taskId: string,
  states: readonly string[],
  timeoutMs = 30_000,
): Promise<T> {
  return eventually(`task ${taskId} ${states.join(" or ")}`, () => status(taskId), {
    timeoutMs,
    until: (s) => states.includes(s.state),
  });
}
