import type { Request, RequestHandler, Response } from "express";
import { pinoHttp, type StdSerializedResults } from "pino-http";
import { withLogContext, type Logger } from "@mdp/core";
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
 * Request ids and one structured log line per request, by pino-http (`req`, `actor`, `tokenId`, `res`,
 * `responseTime`, "request completed" / "request aborted" / "request errored" at info, and `req.log`): who made the
 * request, never how. Its request serializer is wrapped so that the line holds no credential: credential-like query
 * values are redacted, credential headers left out, and the query string of `hideQuery` paths dropped.
 *
 * pino-http binds a child logger to every request, serializing its headers, whether or not a line will be written.
 * Below info (LOG_LEVEL=warn, as under load) it would never write one, so it is not mounted at all: requests get their
 * id and nothing else (nothing here reads `req.log`). Measured with pino-http mounted at warn, `pnpm bench evaluate`
 * (3 rounds, paired runs back to back) lost 5% and 28% of its throughput in two pairs (bench/README.md).
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
  const quiet = options.quiet ?? (() => false);
  // Every line written while the request is handled, and every job it queues, carries its id (@mdp/core log-context).
  const withRequestId =
    (inner?: RequestHandler): RequestHandler =>
    (req, res, next) => {
      const id = requestId(req, res);
      req.id = id;
      withLogContext({ requestId: id }, () => (inner ? inner(req, res, next) : next()));
    };
  if (!logger.isLevelEnabled("info")) return withRequestId();
  return withRequestId(
    pinoHttp<Request, Response>({
      logger,
      serializers: { req: serializeRequest },
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
