/**
 * Registers the OpenTelemetry SDK (OTLP/HTTP export; http, express, graphql, ioredis and pg instrumentation) when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, and does nothing otherwise. It must run before express, pg or ioredis are
 * loaded for their instrumentation to apply, so each service imports its `instrument.ts` first; the SDK is required
 * lazily so a process without telemetry never loads it.
 */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): () => Promise<void> {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return async () => {};
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require("@opentelemetry/sdk-node") as typeof import("@opentelemetry/sdk-node");
  const { OTLPTraceExporter } =
    require("@opentelemetry/exporter-trace-otlp-http") as typeof import("@opentelemetry/exporter-trace-otlp-http");
  const { getNodeAutoInstrumentations } =
    require("@opentelemetry/auto-instrumentations-node") as typeof import("@opentelemetry/auto-instrumentations-node");
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName,
    traceExporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, "")}/v1/traces` }),
    instrumentations: [getNodeAutoInstrumentations({ "@opentelemetry/instrumentation-fs": { enabled: false } })],
  });
  sdk.start();
  return () => sdk.shutdown();
}
