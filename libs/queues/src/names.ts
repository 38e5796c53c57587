export const QUEUE_NAMES = {
  truncate: "truncate-timeseries",
  evaluate: "evaluate-tests",
  /** one job per firing of a retention policy's job scheduler: the truncation worker turns it into a truncation task */
  retention: "retention-schedules",
  /** one job per firing of a scheduled test's job scheduler: the evaluation worker turns it into a runTest task */
  testSchedule: "test-schedules",
} as const;

export type QueueKey = keyof typeof QUEUE_NAMES;
export type QueueName = (typeof QUEUE_NAMES)[QueueKey];
