import { Queue, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { injectTraceContext } from "@mdp/core";
import { jobName, jobOptions } from "./job-options";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { PAYLOADS, type PayloadInput } from "./payloads";

/** Omit that keeps a union a union (evaluate-tests has two kinds of payload). */
type WithoutTrace<T> = T extends unknown ? Omit<T, "trace"> : never;

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

  async enqueue(jobId: string, payload: WithoutTrace<PayloadInput<Q>>): Promise<Job> {
    const data = PAYLOADS[this.key].parse({ ...payload, trace: injectTraceContext() });
    const kind = "kind" in data ? data.kind : undefined;
    return this.queue.add(jobName(this.key, kind), data, jobOptions(this.key, jobId, kind));
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
