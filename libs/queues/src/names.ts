export const QUEUE_NAMES = {
  truncate: "truncate-timeseries",
  evaluate: "evaluate-tests",
  /** one job per firing of a retention policy's job scheduler: the truncation worker turns it into a truncation task */
  retention: "retention-schedules",
  /** one job per firing of a scheduled test's job scheduler: the evaluation worker turns it into a runTest task */
  testSchedule: "test-schedules",
  /**
   * the one writer of the schedules' job schedulers: a job asks to make one schedule's scheduler (or all of them)
   * follow its row; at most one runs at a time in the whole cluster (the queue's global concurrency is 1)
   */
  scheduleSync: "schedule-sync",
  /** chores a truncation worker runs once per cluster, fired by job schedulers (chores.ts) */
  truncationChores: "truncation-chores",
  /** chores an evaluation worker runs once per cluster, fired by job schedulers (chores.ts) */
  evaluationChores: "evaluation-chores",
  /** chores a webhook worker runs once per cluster (the delivery log's settling and retention), fired by job schedulers */
  webhookChores: "webhook-chores",
  /** chores a gateway runs once per cluster (idle access tokens, token usage's retention), fired by job schedulers */
  gatewayChores: "gateway-chores",
} as const;

export type QueueKey = keyof typeof QUEUE_NAMES;
export type QueueName = (typeof QUEUE_NAMES)[QueueKey];

/** The kinds of schedule (each a `ScheduleKind` of @mdp/schedules): what a schedule-sync job names. */
export const SCHEDULE_KIND_NAMES = ["scheduledTest", "retentionPolicy"] as const;
export type ScheduleKindName = (typeof SCHEDULE_KIND_NAMES)[number];
