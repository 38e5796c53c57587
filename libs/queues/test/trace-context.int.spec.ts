/**
 * Trace context travels from the producer into the worker through the job (real Redis), by BullMQ's OpenTelemetry
 * integration (bullmq-otel): a job queued inside a span is processed inside a span of the same trace. An
 * OpenTelemetry SDK would register the same propagator and context manager that this test registers by hand.
 */
import { context, propagation, trace, TraceFlags } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { randomUUID } from "node:crypto";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, createWorker, Producer } from "../src";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

describe("trace context", () => {
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  it("reaches the worker's handler from the span the job was queued in", async () => {
    const prefix = `{test-trace-${randomUUID()}}`;
    const connection = createRedis(REDIS_URL, "worker");
    const producer = new Producer("truncate", connection, prefix);
    const seen: Array<{ traceId?: string; metadata?: string }> = [];
    const workerConnection = createRedis(REDIS_URL, "worker");
    const worker = createWorker(
      "truncate",
      async (_payload, job) => {
        seen.push({ traceId: trace.getActiveSpan()?.spanContext().traceId, metadata: job.opts.telemetry?.metadata });
        return null;
      },
      { connection: workerConnection, prefix, concurrency: 1, logger: createLogger("test", "silent") },
    );
    void worker.run();

    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = trace.setSpanContext(context.active(), {
      traceId,
      spanId: "00f067aa0ba902b7",
      traceFlags: TraceFlags.SAMPLED,
    });
    await context.with(parent, () =>
      producer.enqueue("t1", {
        taskId: "t1",
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: 1,
        batchSize: 1,
      }),
    );
    await eventually("the worker has handled the job", () => seen.length > 0);

    // The job carries the producer's span (BullMQ's "add" span, a child of the caller's) in its options.
    expect(seen[0]?.metadata).toMatch(new RegExp(`"traceparent":"00-${traceId}-[0-9a-f]{16}-01"`));
    expect(seen[0]?.traceId).toBe(traceId);
    await worker.close();
    await producer.queue.obliterate({ force: true });
    await producer.close();
    await closeRedis(connection);
    await closeRedis(workerConnection);
  });
});
