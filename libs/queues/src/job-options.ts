import type { JobsOptions, WorkerOptions } from "bullmq";
import type { QueueKey } from "./names";

const HOUR = 3600;
/** Attempts of an evaluate job: see jobOptions. */
export const EVALUATE_ATTEMPTS = 6;
const DAY = 24 * HOUR;

/**
 * Every job's options are decided here, not at each add(). Failures are kept (aged out after a week) so the
 * dashboard and getTaskStatus can explain them; successes are kept a day for the dashboard. Durable status lives in
 * the task table anyway. `kind` is the payload's kind where a queue carries several (see jobName).
 */
export function jobOptions(queue: QueueKey, jobId: string, kind?: string): JobsOptions {
  const retention = { removeOnComplete: { age: DAY, count: 10_000 }, removeOnFail: { age: 7 * DAY } };
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
  }
}

/**
 * The template options of every job a schedule creates (cron-schedules.ts: retention policies, scheduled tests; BullMQ
 * names those jobs itself): retried through a short PostgreSQL or Redis outage; a firing every second stays bounded in
 * Redis (the last 1,000 kept, a day at most).
 */
export function scheduleJobOptions(): Omit<JobsOptions, "jobId"> {
  return {
    attempts: 3,
    backoff: { type: "exponential", delay: 1_000 },
    removeOnComplete: { age: DAY, count: 1_000 },
    removeOnFail: { age: 7 * DAY, count: 1_000 },
  };
}

/**
 * The job's name, as the queue dashboard shows it: the queue key, or the payload's `kind` where a queue carries
 * several kinds of job (evaluate-tests: "evaluate" and "runTest").
 */
export function jobName(queue: QueueKey, kind?: string): string {
  return kind ?? queue;
}

/**
 * How quickly a job whose worker died (SIGKILL, lost machine) goes back to the queue: its lock expires after
 * lockDuration and the stall check runs every stalledInterval. Truncation steps are short and resumable, so a dead
 * worker's task is picked up again within ~20 s rather than BullMQ's default minute.
 */
export function workerOptions(
  queue: QueueKey,
): Pick<WorkerOptions, "lockDuration" | "stalledInterval" | "maxStalledCount"> {
  switch (queue) {
    case "truncate":
      return { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 2 };
    case "evaluate":
      return { lockDuration: 30_000, stalledInterval: 30_000, maxStalledCount: 1 };
    case "retention":
    case "testSchedule":
      return { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 2 };
  }
}
