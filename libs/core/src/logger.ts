import { pino, type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Structured JSON logs. Credentials are redacted at the logger so that no code path can print a token by accident.
 */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
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
  });
}
