import { UnrecoverableError, Worker, type Job, type Processor } from "bullmq";
import type { RedisConnection } from "./connection";
import type { Logger } from "@mdp/core";
import { workerOptions } from "./job-options";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { PAYLOADS, type Payload } from "./payloads";
import { telemetry } from "./telemetry";

/** `token` is the job's lock token, needed to hand a job back to the queue (job.moveToDelayed). */
export type JobHandler<Q extends QueueKey> = (
  payload: Payload<Q>,
  job: Job,
  token: string | undefined,
) => Promise<unknown>;

export interface WorkerOptions<Q extends QueueKey = QueueKey> {
  connection: RedisConnection;
  prefix: string;
  concurrency: number;
  logger: Logger;
  /**
   * Called when BullMQ fails a job without running the handler: a job that stalled (its worker died or hung) more
   * often than the queue allows is failed by the next worker to fetch it. The handler, which records how its attempts
   * end, never sees that last one; this is where the task it stood for is marked as failed.
   */
  onGivenUp?: (payload: Payload<Q>, job: Job, reason: string) => Promise<void>;
}

/**
 * A typed worker for one queue. The payload is re-checked here (a job can outlive the code that queued it); a
 * payload that will never parse fails without retries. The worker does not run until `run()` is called, so a process
 * takes work only once it is ready.
 */
export function createWorker<Q extends QueueKey>(key: Q, handler: JobHandler<Q>, options: WorkerOptions<Q>): Worker {
  const processor: Processor = async (job, token) => {
    const parsed = PAYLOADS[key].safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(`Invalid ${QUEUE_NAMES[key]} payload: ${parsed.error.message}`);
    }
    const payload = parsed.data as Payload<Q>;
    // Inside BullMQ's "process" span (bullmq-otel), a child of the span the job was queued in.
    return handler(payload, job, token);
  };
  const worker = new Worker(QUEUE_NAMES[key], processor, {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    autorun: false,
    telemetry,
    ...workerOptions(key),
  });
  worker.on("failed", (job, error) => {
    options.logger.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: error.message }, "job failed");
    // deferredFailure: BullMQ's mark on a job it fails without running (see onGivenUp)
    if (!job?.deferredFailure || !options.onGivenUp) return;
    const parsed = PAYLOADS[key].safeParse(job.data);
    if (!parsed.success) return;
    options
      .onGivenUp(parsed.data as Payload<Q>, job, job.deferredFailure)
      .catch((cause: unknown) =>
        options.logger.error({ jobId: job.id, err: cause }, "could not record a job BullMQ gave up on"),
      );
  });
  worker.on("error", (error) => options.logger.error({ err: error.message }, "worker error"));
  return worker;
}
