import type { Express, RequestHandler } from "express";
import type { IncomingMessage } from "node:http";
import { stdSerializers } from "pino-http";
import type { Logger } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { requestId } from "./request-id";

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
    }
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
