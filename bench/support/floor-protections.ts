/**
 * What every request to the gateway pays beside its operation, done the way each protection's library documents it,
 * with no code of the gateway's: a floor that keeps the protections a user relies on (bench/cost's references). In
 * front of the bare Apollo of token-floor-server.ts when FLOOR_PROTECTIONS is set:
 * - tracing: OpenTelemetry's http instrumentation (floor-telemetry.ts), ids without recording, as the gateway;
 * - security headers: helmet's defaults;
 * - metrics: a prom-client histogram of every request's duration by method, route and status;
 * - request ids and logging: pino-http on a pino logger at warn (the bench's gateway level: no line per request);
 * - authentication: the bearer token's SHA-256 looked up among the known tokens (as a cache of them would be), its
 *   expiry checked, the caller kept in an AsyncLocalStorage for the request's resolvers; a request without it is 401.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import type { Express, RequestHandler } from "express";
import helmet from "helmet";
import pino from "pino";
import { pinoHttp } from "pino-http";
import prom from "prom-client";

export interface Caller {
  urn: string;
  expiresAt: number;
}

export const callers = new AsyncLocalStorage<Caller>();

/** Mounts the protections on `app`; `tokens`: the bearer tokens accepted, each with its caller. */
export function protect(app: Express, tokens: ReadonlyMap<string, Caller>): void {
  const known = new Map([...tokens].map(([token, caller]) => [sha256(token), caller]));
  const duration = new prom.Histogram({
    name: "http_request_duration_seconds",
    help: "requests by method, route and status",
    labelNames: ["method", "route", "status"],
  });
  const metrics: RequestHandler = (req, res, next) => {
    const end = duration.startTimer();
    res.on("finish", () =>
      end({ method: req.method, route: req.baseUrl + (req.route?.path ?? ""), status: res.statusCode }),
    );
    next();
  };
  const authenticate: RequestHandler = (req, res, next) => {
    const header = req.headers.authorization;
    const caller = header?.startsWith("Bearer ") ? known.get(sha256(header.slice(7))) : undefined;
    if (!caller || caller.expiresAt <= Date.now()) {
      res.status(401).json({ message: "Unable to verify the provided token." });
      return;
    }
    callers.run(caller, next);
  };
  app.use(helmet());
  app.use(metrics);
  app.use(pinoHttp({ logger: pino({ level: "warn" }) }));
  app.use(authenticate);
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("base64url");
