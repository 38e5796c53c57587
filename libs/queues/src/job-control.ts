import { DelayedError, type Job } from "bullmq";

/** Whether BullMQ will not retry this attempt of the job if it fails. */
export function isLastAttempt(job: Pick<Job, "attemptsMade" | "opts">): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

/**
 * Hands the job back to its queue, to be taken again in `ms`, without spending an attempt: what a handler does when
 * it cannot start yet (no slot for its actor, PostgreSQL away, its task held by another worker). Never returns: the
 * DelayedError it throws tells BullMQ's worker the job was moved, not failed.
 */
export async function handBack(job: Pick<Job, "moveToDelayed">, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}
