import { Queue, QueueEvents, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { injectTraceContext } from "@mdp/core";
import { jobOptions } from "./job-options";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { PAYLOADS, type Payload } from "./payloads";

/** A typed producer for one queue. Payloads are validated before they reach Redis; trace context is attached. */
export class Producer<Q extends QueueKey> {
  readonly queue: Queue;

  constructor(
    readonly key: Q,
    connection: Redis,
    prefix: string,
  ) {
    this.queue = new Queue(QUEUE_NAMES[key], { connection, prefix });
  }

  async enqueue(jobId: string, payload: Omit<Payload<Q>, "trace">): Promise<Job> {
    const data = PAYLOADS[this.key].parse({ ...payload, trace: injectTraceContext() });
    return this.queue.add(this.key, data, jobOptions(this.key, jobId));
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

/** Waits for a job's result through QueueEvents; rejects with the job's failure reason or on timeout. */
export function waitForResult(job: Job, events: QueueEvents, timeoutMs: number): Promise<unknown> {
  return job.waitUntilFinished(events, timeoutMs);
}
