import type { Express, RequestHandler } from "express";
import type { IncomingMessage } from "node:http";
import { stdSerializers } from "pino-http";
import type { Logger } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { requestId } from "./request-id";

/**
 * Names of query parameters and headers whose values are credentials: `access_token` (OAuth's query form), `token`,
 * `api_key`, `password`, `client_secret`, `X-Auth-Token`, `Authorization`, `Cookie`... matched as a part of the name, so
 * a new spelling is covered too. A false positive costs one value in a log line.
 */
const CREDENTIAL_NAME =
  /token|secret|passw|pwd|api[-_]?key|auth|cookie|session|signature|credential|^sig$|^key$|^code$/i;
const REDACTED = "[redacted]";

/** The URL with the value of every credential-like query parameter replaced. */
export function redactedUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  const parts = url
    .slice(at + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, " "));
      } catch {
        name = rawName; // not validly percent-encoded: judged as it is
      }
      return eq >= 0 && CREDENTIAL_NAME.test(name) ? `${rawName}=${REDACTED}` : pair;
    });
  return `${url.slice(0, at)}?${parts.join("&")}`;
}

function redactedQuery(query: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [name, CREDENTIAL_NAME.test(name) ? REDACTED : value]),
  );
}

/** The headers but those that carry credentials, which are never logged, not even redacted. */
function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_NAME.test(name)));
}

/**
 * Request ids and one structured log line per request, in pino-http's shape (`req`, `actor`, `tokenId`, `res`,
 * `responseTime`, "request completed" / "request aborted" / "request errored" at info): who made the request, never
 * how, since the logger redacts credentials.
 *
 * pino-http itself builds two or three child loggers per request, serializing and redacting the request headers each
 * time, even when the level drops the line: about a tenth of the gateway's CPU at LOG_LEVEL=warn, more with a bearer
 * token to redact. Here a request costs nothing beyond its id unless its line is written; the line is built once, when
 * the response ends, with the same serializers.
 */
export function requestLogger(
  app: Express,
  logger: Logger,
  options: {
    /** requests not logged at all */
    ignore?: (url: string) => boolean;
    /** requests logged without their query string, which may carry secrets (a GraphQL query over GET may) */
    hideQuery?: (path: string) => boolean;
  } = {},
): RequestHandler {
  const hideQuery = options.hideQuery ?? (() => false);
  const serializeRequest = (req: IncomingMessage) => {
    const line = stdSerializers.req(req);
    const path = line.url.split("?", 1)[0]!;
    if (hideQuery(path)) {
      line.url = path;
      delete (line as { query?: unknown }).query;
    } else if (path.length < line.url.length) {
      line.url = redactedUrl(line.url);
      const query = (line as { query?: unknown }).query;
      if (query !== null && typeof query === "object") (line as { query?: unknown }).query = redactedQuery(query);
    }
    line.headers = withoutCredentials(line.headers);
    return line;
  };
  const log = logger.child(
    {},
    { serializers: { req: serializeRequest, res: stdSerializers.res, err: stdSerializers.err } },
  );
  const ignore = options.ignore ?? (() => false);

  // `req.log` as pino-http provides it (a logger bound to the request), made on first use only.
  const logs = new WeakMap<IncomingMessage, Logger>();
  Object.defineProperty(app.request, "log", {
    configurable: true,
    get(this: IncomingMessage): Logger {
      let bound = logs.get(this);
      if (!bound) logs.set(this, (bound = log.child({ req: this })));
      return bound;
    },
    set(this: IncomingMessage, value: Logger) {
      logs.set(this, value);
    },
  });

  return (req, res, next) => {
    req.id = requestId(req, res);
    if (log.isLevelEnabled("info") && !ignore(req.url)) {
      const startedAt = Date.now();
      let logged = false;
      const done = (error?: Error) => {
        if (logged) return;
        logged = true;
        const actor = res.locals.actor as Actor | undefined;
        const line = {
          req,
          ...(actor ? { actor: actor.urn, tokenId: actor.tokenId } : {}),
          res,
          responseTime: Date.now() - startedAt,
        };
        const failure =
          error ??
          res.err ??
          (res.statusCode >= 500 ? new Error(`failed with status code ${res.statusCode}`) : undefined);
        if (failure) log.info({ ...line, err: failure }, "request errored");
        else log.info(line, !req.readableAborted && res.writableEnded ? "request completed" : "request aborted");
      };
      res.on("finish", () => done());
      res.on("close", () => done());
      res.on("error", done);
    }
    next();
  };
}
