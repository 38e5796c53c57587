import { isSpanContextValid, trace } from "@opentelemetry/api";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";
import type { Config } from "./config";
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
 * `destination` (stdout by default) lets a test read the lines the service's own logger writes; a service passes
 * logDestination(config), which turns them into readable lines on a developer's terminal.
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

export type LogFormat = "json" | "pretty";

/**
 * The format a service logs in: LOG_FORMAT when set; otherwise readable lines in development on a terminal, and JSON
 * everywhere else (a pipe, a file, a log collector). Production is JSON: loadConfig refuses LOG_FORMAT=pretty there.
 */
export function logFormat(
  config: Pick<Config, "LOG_FORMAT" | "NODE_ENV">,
  stdoutIsTerminal = Boolean(process.stdout.isTTY),
): LogFormat {
  if (config.NODE_ENV === "production") return "json";
  return config.LOG_FORMAT ?? (config.NODE_ENV === "development" && stdoutIsTerminal ? "pretty" : "json");
}

/** createLogger's destination for a service: stdout as is for JSON, through prettyLine for pretty. */
export function logDestination(config: Pick<Config, "LOG_FORMAT" | "NODE_ENV">): DestinationStream | undefined {
  if (logFormat(config) === "json") return undefined;
  const colors = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
  return {
    write(line: string) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stdout.write(line); // not pino's: as it came
        return;
      }
      process.stdout.write(`${prettyLine(record, colors)}\n`);
    },
  };
}

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: "TRACE", color: "90" },
  20: { name: "DEBUG", color: "36" },
  30: { name: "INFO", color: "32" },
  40: { name: "WARN", color: "33" },
  50: { name: "ERROR", color: "31" },
  60: { name: "FATAL", color: "35" },
};

/** Fields pino writes on every line, shown in the line's head or not at all; span_id: trace_id finds the trace. */
const HEAD_FIELDS = new Set(["level", "time", "pid", "hostname", "name", "msg", "v", "span_id"]);

/** A field's value as `key=value` shows it: bare when it reads unambiguously, JSON otherwise. */
function valueText(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** An error as pino serializes it (`{type, message, stack}`): its message and where it was thrown, on one line. */
function errorText(err: unknown): string {
  if (!err || typeof err !== "object") return valueText(err);
  const { type, message, stack } = err as { type?: unknown; message?: unknown; stack?: unknown };
  const at = typeof stack === "string" ? /\n\s+at (.+)/.exec(stack)?.[1] : undefined;
  const text = `${typeof type === "string" ? `${type}: ` : ""}${String(message ?? "")}`;
  return `${JSON.stringify(text)}${at ? ` (at ${at})` : ""}`;
}

/**
 * One log record as one readable line: `12:04:05.123 INFO  gateway: request completed POST /gms/… 200 12 ms
 * actor=urn:li:corpuser:admin …`: the time (local), level, service and message, a request's method, path, status
 * and duration, then every other field as key=value.
 */
export function prettyLine(record: Record<string, unknown>, colors = false): string {
  const paint = (code: string, text: string) => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
  const level = LEVELS[record.level as number] ?? { name: String(record.level), color: "0" };
  const time = typeof record.time === "number" ? new Date(record.time) : new Date();
  const clock = [time.getHours(), time.getMinutes(), time.getSeconds()]
    .map((n) => String(n).padStart(2, "0"))
    .join(":");
  const parts = [
    paint("90", `${clock}.${String(time.getMilliseconds()).padStart(3, "0")}`),
    paint(level.color, level.name.padEnd(5)),
    `${String(record.name ?? "")}:`,
    String(record.msg ?? ""),
  ];
  const skip = new Set(HEAD_FIELDS);
  const req = record.req as { method?: unknown; url?: unknown } | undefined;
  const res = record.res as { statusCode?: unknown } | undefined;
  if (req && typeof req.method === "string" && typeof req.url === "string") {
    parts.push(`${req.method} ${req.url}`);
    if (res && typeof res.statusCode === "number") parts.push(String(res.statusCode));
    if (typeof record.responseTime === "number") parts.push(`${record.responseTime} ms`);
    skip.add("req").add("res").add("responseTime");
  }
  for (const [key, value] of Object.entries(record)) {
    if (skip.has(key) || value === undefined) continue;
    parts.push(`${paint("90", `${key}=`)}${key === "err" ? errorText(value) : valueText(value)}`);
  }
  return parts.filter(Boolean).join(" ");
}
