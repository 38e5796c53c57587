import type { Request, RequestHandler, Response } from "express";
import { pinoHttp, type StdSerializedResults } from "pino-http";
import { withLogContext, type Logger } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { requestId } from "./request-id";

/**
 * Names of query parameters whose values are credentials: `access_token` (OAuth's query form), `token`, `api_key`,
 * `password`, `client_secret`, `session`... matched as a part of the name, so a new spelling is covered too. A false
 * positive costs one value in a log line.
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

/**
 * Request ids and one log line per request, by pino-http ("request completed" / "request aborted" / "request errored"
 * at info, and `req.log`): what was asked (`req: {id, method, url}`), the answer's status (`res: {statusCode}`), how
 * long it took (`responseTime`, ms), who asked (`actor`, `tokenId`: never how), and the request and trace ids every
 * line carries (`request_id`, `trace_id`: correlationFields). No headers: the response's are the same dozen security
 * headers on every line, and the request's say nothing the fields above do not, or carry credentials. The URL holds
 * no credential either: credential-like query values are redacted, and the query string of `hideQuery` paths dropped.
 *
 * pino-http binds a child logger to every request, serializing its headers, whether or not a line will be written.
 * Below info (LOG_LEVEL=warn, as under load) it would never write one, so it is not mounted at all: requests get their
 * id and nothing else (nothing here reads `req.log`). Measured with pino-http mounted at warn, `pnpm bench evaluate`
 * (3 rounds, paired runs back to back) lost 5% and 28% of its throughput in two pairs
 * (docs/decisions/0003-request-log-and-body-reader-libraries.md).
 */
export function requestLogger(
  logger: Logger,
  options: {
    /** requests not logged at all */
    ignore?: (url: string) => boolean;
    /** requests logged without their query string, which may carry secrets (a GraphQL query over GET may) */
    hideQuery?: (path: string) => boolean;
    /** requests logged at debug when they succeed: many, repeated, and of no interest one by one */
    quiet?: (method: string, url: string) => boolean;
  } = {},
): RequestHandler {
  const hideQuery = options.hideQuery ?? (() => false);
  const ignore = options.ignore ?? (() => false);
  /** pino-http hands its serializers the standard serialization of the request (stdSerializers.req). */
  const serializeRequest = (line: StdSerializedResults["req"]) => {
    const path = line.url.split("?", 1)[0]!;
    return { id: line.id, method: line.method, url: hideQuery(path) ? path : redactedUrl(line.url) };
  };
  const serializeResponse = (line: StdSerializedResults["res"]) => ({ statusCode: line.statusCode });
  const quiet = options.quiet ?? (() => false);
  // Every line written while the request is handled, and every job it queues, carries its id (@mdp/core log-context).
  const withRequestId =
    (inner?: RequestHandler): RequestHandler =>
    (req, res, next) => {
      const id = requestId(req, res);
      req.id = id;
      if (inner) withLogContext({ requestId: id }, () => inner(req, res, next));
      else withLogContext({ requestId: id }, next as () => void);
    };
  if (!logger.isLevelEnabled("info")) return withRequestId();
  return withRequestId(
    pinoHttp<Request, Response>({
      logger,
      serializers: { req: serializeRequest, res: serializeResponse },
      genReqId: (req) => req.id as string,
      autoLogging: { ignore: (req) => ignore(req.url ?? "") },
      // A successful quiet request (a dashboard asset, its polling) at debug; its failures stay at info.
      customLogLevel: (req, res, error) =>
        !error && res.statusCode < 400 && quiet(req.method, req.originalUrl) ? "debug" : "info",
      // Read when the line is written, after authentication: who, and with which token.
      customProps: (_req, res) => {
        const actor = res.locals.actor as Actor | undefined;
        return actor ? { actor: actor.urn, tokenId: actor.tokenId } : {};
      },
    }),
  );
}
