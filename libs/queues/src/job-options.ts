import type { JobsOptions, WorkerOptions } from "bullmq";
import type { QueueKey } from "./names";

const HOUR = 3600;
/** Attempts of an evaluate job: see jobOptions. */
export const EVALUATE_ATTEMPTS = 6;
const DAY = 24 * HOUR;
/**
 * A failed job keeps its message (failedReason), never its stack: the dashboard shows jobs to its users, and a stack
 * names the server's source paths. The worker's log line of the failure has the detail operators need.
 */
const NO_STACKS = { stackTraceLimit: 0 } as const;

/**
 * Every job's options are decided here, not at each add(). Failures are kept (aged out after a week) so the
 * dashboard and getTaskStatus can explain them; successes are kept a day for the dashboard. Durable status lives in
 * the task table anyway. `kind` is the payload's kind where a queue carries several (see jobName).
 */
export function jobOptions(queue: QueueKey, jobId: string, kind?: string): JobsOptions {
  const retention = { removeOnComplete: { age: DAY, count: 10_000 }, removeOnFail: { age: 7 * DAY }, ...NO_STACKS };
  switch (queue) {
    case "truncate":
      // Truncation is resumable and idempotent, so a crashed or stalled attempt is retried.
      return { jobId, attempts: 3, backoff: { type: "exponential", delay: 2_000 }, ...retention };
    case "evaluate":
      // A test run over every entity checkpoints each batch, so like truncation it resumes after a crash.
      if (kind === "runTest")
        return { jobId, attempts: 3, backoff: { type: "exponential", delay: 2_000 }, ...retention };
      // A caller is waiting (EVALUATE_TIMEOUT_MS, 30 s by default): retries 0.25, 0.5, 1, 2 and 4 s apart outlast a
      // PostgreSQL restart of a few seconds (7.75 s in all) and still answer a caller who waits the default.
      return { jobId, attempts: EVALUATE_ATTEMPTS, backoff: { type: "exponential", delay: 250 }, ...retention };
    case "retention":
    case "testSchedule":
      // Creating a run's task is quick and deduplicated per policy or test, so a retry after an outage starts or joins
      // it once.
      return { jobId, ...scheduleJobOptions() };
    case "scheduleSync":
    case "truncationChores":
    case "evaluationChores":
    case "webhookChores":
    case "gatewayChores":
      // Quick and idempotent: retried through a short outage, and the next firing converges anyway.
      return { jobId, ...scheduleJobOptions() };
  }
}

/**
 * The template options of every job a schedule creates (cron-schedules.ts: retention policies, scheduled tests; BullMQ
 * names those jobs itself): retried through a short PostgreSQL or Redis outage; a firing every second stays bounded in
 * Redis (the last 1,000 kept, a day at most).
 */
export function scheduleJobOptions(): Omit<JobsOptions, "jobId"> {
  return {
    ...NO_STACKS,
    attempts: 3,
    backoff: { type: "exponential", delay: 1_000 },
    removeOnComplete: { age: DAY, count: 1_000 },
    removeOnFail: { age: 7 * DAY, count: 1_000 },
  };
}

/** The name of a schedule-sync job that a write of a schedule's row asks for. */
export const SYNC_SCHEDULE_JOB = "sync-schedule";

/**
 * The job's name, as the queue dashboard shows it: the queue key, or the payload's `kind` where a queue carries
 * several kinds of job (evaluate-tests: "evaluate" and "runTest").
 */
export function jobName(queue: QueueKey, kind?: string): string {
  // A sync asked for by a write (schedule-sync.ts), beside the periodic `sync-all-schedules` chore.
  if (queue === "scheduleSync") return SYNC_SCHEDULE_JOB;
  return kind ?? queue;
}

/**
 * How quickly a job whose worker died (SIGKILL, lost machine) goes back to the queue: its lock expires after
 * lockDuration and the stall check runs every stalledInterval. A queue whose jobs are tasks under a lease (`leaseMs`,
 * the task lifecycle's: truncate, evaluate with its runTest jobs) is checked so that the job is back before the dead
 * attempt's lease lapses: lock at half the lease, a check every quarter, so by 3/4 of a lease after the death the job
 * is delivered again, finds the lease still live ("held") and comes back the moment it lapses. A dead worker's task
 * thus resumes within one lease (10 s by default); a worker whose event loop stalls for half a lease loses its lock
 * and the task is delivered again, which its live lease answers "held" (maxStalledCount 2 allows for one such).
 */
export function workerOptions(
  queue: QueueKey,
  leaseMs?: number,
): Pick<WorkerOptions, "lockDuration" | "stalledInterval" | "maxStalledCount"> {
  switch (queue) {
    case "truncate":
    case "evaluate":
      if (leaseMs !== undefined) {
        return { lockDuration: Math.ceil(leaseMs / 2), stalledInterval: Math.ceil(leaseMs / 4), maxStalledCount: 2 };
      }
      return queue === "truncate"
        ? { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 2 }
        : { lockDuration: 30_000, stalledInterval: 30_000, maxStalledCount: 1 };
    case "retention":
    case "testSchedule":
    case "scheduleSync":
    case "truncationChores":
    case "evaluationChores":
    case "webhookChores":
    case "gatewayChores":
      return { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 2 };
  }
}
