import { leanContextManager } from "./otel-context";
import { traceIncomingRequests } from "./otel-incoming";

/**
 * Registers the OpenTelemetry SDK. It must run before express, pg or ioredis are loaded for their instrumentation to
 * apply, so each service imports its `instrument.ts` first; the SDK is required lazily, here only.
 *
 * - OTEL_EXPORTER_OTLP_ENDPOINT set: traces are recorded and exported over OTLP/HTTP (http, express, graphql, ioredis
 *   and pg instrumentation).
 * - unset: nothing is recorded or exported, but trace and span ids still exist, so that log lines carry `trace_id` and
 *   `span_id` (logger.ts) and a request's id reaches the jobs it queues (BullMQ's integration, @mdp/queues): a sampler
 *   that records nothing still hands out ids (non-recording spans). Only the http instrumentation is loaded, for
 *   outgoing requests; incoming ones get their span and context from traceIncomingRequests (otel-incoming.ts), which
 *   skips the span attributes and duration metrics nothing records. The cost is that of a context per request.
 *
 * Both run with leanContextManager (otel-context.ts): OpenTelemetry's AsyncLocalStorage context manager, binding the
 * request and response emitters to the request's context by wrapping their `emit` once instead of every listener.
 *
 * Metrics are not exported over OTLP (each service serves Prometheus `/metrics`), and pino's instrumentation is off:
 * logger.ts adds the ids itself, with or without an endpoint.
 */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): () => Promise<void> {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK, tracing } = require("@opentelemetry/sdk-node") as typeof import("@opentelemetry/sdk-node");
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = endpoint ? exporting(endpoint) : idsOnly();
  sdk.start();
  // ids-only: incoming requests get their context from otel-incoming.ts, with no span attributes computed
  const untrace = endpoint ? undefined : traceIncomingRequests(`@mdp/${serviceName}`);
  return () => {
    untrace?.();
    return sdk.shutdown();
  };

  function exporting(url: string) {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { OTLPTraceExporter } =
      require("@opentelemetry/exporter-trace-otlp-http") as typeof import("@opentelemetry/exporter-trace-otlp-http");
    const { HttpInstrumentation } =
      require("@opentelemetry/instrumentation-http") as typeof import("@opentelemetry/instrumentation-http");
    const { ExpressInstrumentation } =
      require("@opentelemetry/instrumentation-express") as typeof import("@opentelemetry/instrumentation-express");
    const { GraphQLInstrumentation } =
      require("@opentelemetry/instrumentation-graphql") as typeof import("@opentelemetry/instrumentation-graphql");
    const { IORedisInstrumentation } =
      require("@opentelemetry/instrumentation-ioredis") as typeof import("@opentelemetry/instrumentation-ioredis");
    const { PgInstrumentation } =
      require("@opentelemetry/instrumentation-pg") as typeof import("@opentelemetry/instrumentation-pg");
    /* eslint-enable @typescript-eslint/no-require-imports */
    return new NodeSDK({
      serviceName,
      contextManager: leanContextManager(),
      traceExporter: new OTLPTraceExporter({ url: `${url.replace(/\/$/, "")}/v1/traces` }),
      metricReaders: [],
      logRecordProcessors: [],
      // The five libraries a request passes through, rather than auto-instrumentations-node's forty-odd (loaded and
      // patched at every start, most for libraries we do not use).
      instrumentations: [
        new HttpInstrumentation(),
        new ExpressInstrumentation(),
        new GraphQLInstrumentation(),
        new IORedisInstrumentation(),
        new PgInstrumentation(),
      ],
    });
  }

  function idsOnly() {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { HttpInstrumentation } =
      require("@opentelemetry/instrumentation-http") as typeof import("@opentelemetry/instrumentation-http");
    /* eslint-enable @typescript-eslint/no-require-imports */
    return new NodeSDK({
      serviceName,
      sampler: new tracing.AlwaysOffSampler(),
      contextManager: leanContextManager(),
      // The tracer provider is registered only when it has a span processor; this one drops what it is given.
      spanProcessors: [new tracing.NoopSpanProcessor()],
      metricReaders: [],
      logRecordProcessors: [],
      autoDetectResources: false,
      instrumentations: [new HttpInstrumentation({ disableIncomingRequestInstrumentation: true })],
    });
  }
}
