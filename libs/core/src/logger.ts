import { isSpanContextValid, trace } from "@opentelemetry/api";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";
import { currentLogContext } from "./log-context";

export type { DestinationStream, Logger } from "pino";

/**
 * What joins a log line to its trace and its request: the active span's ids (`trace_id`, `span_id`, as OpenTelemetry's
 * own log correlation names them; the SDK is always registered, see otel-sdk.ts) and the request id of the request or
 * job being handled (log-context.ts). A line written outside any request or job carries none of them.
 */
export function correlationFields(): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const span = trace.getActiveSpan()?.spanContext();
  if (span && isSpanContextValid(span)) {
    fields.trace_id = span.traceId;
    fields.span_id = span.spanId;
  }
  const context = currentLogContext();
  if (context?.requestId !== undefined) fields.request_id = context.requestId;
  if (context?.requestIds !== undefined) fields.request_ids = context.requestIds;
  return fields;
}

/**
 * Structured JSON logs, each line with its trace and request (correlationFields). Credentials are redacted at the logger so that no code path can print a token by accident.
 * `destination` (stdout by default) lets a test read the lines the service's own logger writes.
 */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? "info",
  destination?: DestinationStream,
): Logger {
  const options: LoggerOptions = {
    name: service,
    level,
    mixin: correlationFields,
    redact: {
      paths: [
        "req.headers.authorization",
        "req.headers.cookie",
        'req.headers["x-api-key"]',
        "accessToken",
        "*.accessToken",
        "token",
        "*.token",
        "variables.token",
      ],
      censor: "[redacted]",
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
