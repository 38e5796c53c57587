/**
 * OpenTelemetry for the protected floor (floor-protections.ts), as its SDK's own documentation sets it up for a
 * service that records nothing: the SDK with the http instrumentation (incoming requests included), a sampler that
 * records nothing, and a span processor that drops spans, so that trace ids exist as in the gateway. Imported first by
 * the floor server, before express and http load; a no-op unless FLOOR_PROTECTIONS is set.
 */
import { NodeSDK, tracing } from "@opentelemetry/sdk-node";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";

if (process.env.FLOOR_PROTECTIONS) {
  new NodeSDK({
    serviceName: "protected floor",
    sampler: new tracing.AlwaysOffSampler(),
    spanProcessors: [new tracing.NoopSpanProcessor()],
    metricReaders: [],
    logRecordProcessors: [],
    autoDetectResources: false,
    instrumentations: [new HttpInstrumentation()],
  }).start();
}
