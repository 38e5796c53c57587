import type { QueueEvents } from "bullmq";
import type { EventEmitter } from "node:events";

/** The job did not finish within the wait; it may still finish later. */
export class JobWaitTimeoutError extends Error {
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super(`Job ${jobId} did not finish within ${timeoutMs} ms`);
    this.name = "JobWaitTimeoutError";
  }
}

/** The job failed for good (BullMQ will not retry it). */
export class JobFailedError extends Error {
  constructor(
    readonly jobId: string,
    readonly failedReason: string,
  ) {
    super(`Job ${jobId} failed: ${failedReason}`);
    this.name = "JobFailedError";
  }
}

/**
 * Adds a job (through `enqueue`) and waits for its return value via QueueEvents. The listeners are in place before the
 * job exists, so its end cannot be missed, and no extra Redis round trip is needed to check whether it has already
 * finished (what BullMQ's Job.waitUntilFinished does). `events` must already be consuming (waitUntilReady).
 * Rejects with JobWaitTimeoutError or JobFailedError, or with whatever `enqueue` threw.
 */
export function enqueueAndWait(
  queueEvents: QueueEvents,
  jobId: string,
  timeoutMs: number,
  enqueue: () => Promise<unknown>,
): Promise<unknown> {
  // QueueEvents also emits "<event>:<jobId>" per job; its typed on() only lists the plain event names.
  const emitter: EventEmitter = queueEvents;
  return new Promise((resolve, reject) => {
    const completed = `completed:${jobId}`;
    const failed = `failed:${jobId}`;
    const done = () => {
      clearTimeout(timer);
      emitter.off(completed, onCompleted);
      emitter.off(failed, onFailed);
    };
    const onCompleted = (args: { returnvalue: unknown }) => {
      done();
      resolve(args.returnvalue);
    };
    const onFailed = (args: { failedReason?: string }) => {
      done();
      reject(new JobFailedError(jobId, args.failedReason ?? "unknown reason"));
    };
    const timer = setTimeout(() => {
      done();
      reject(new JobWaitTimeoutError(jobId, timeoutMs));
    }, timeoutMs);
    emitter.on(completed, onCompleted);
    emitter.on(failed, onFailed);
    enqueue().catch((error: unknown) => {
      done();
      reject(error);
    });
  });
}
