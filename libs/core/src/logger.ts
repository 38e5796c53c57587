import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export type { DestinationStream, Logger } from "pino";

/**
 * Structured JSON logs. Credentials are redacted at the logger so that no code path can print a token by accident.
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
