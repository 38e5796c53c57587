export const QUEUE_NAMES = {
  truncate: "truncate-timeseries",
  evaluate: "evaluate-tests",
} as const;

export type QueueKey = keyof typeof QUEUE_NAMES;
export type QueueName = (typeof QUEUE_NAMES)[QueueKey];
