import { BullMQOtel } from "bullmq-otel";

/**
 * BullMQ's own OpenTelemetry integration, given to every Queue and Worker made here: the producer's trace context
 * travels in the job's options and the worker runs the handler inside a "process" span of the same trace. It uses the
 * OpenTelemetry API only, a no-op unless a service registered an SDK (OTEL_EXPORTER_OTLP_ENDPOINT).
 */
export const telemetry = new BullMQOtel({ tracerName: "mdp-queues" });
