import type { ErrorRequestHandler, RequestHandler } from "express";
import { AppError, outageError, toHttpErrorBody, type Logger } from "@mdp/core";
import { databaseResourceExhausted, isDatabaseResourceExhausted, unstorableValueReason } from "@mdp/db";
import { toGraphQLError } from "../graphql/errors";

/** Errors raised by body-parser carry a `type`; they are the client's fault and get their own codes. */
interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/**
 * Turns anything thrown into the JSON error body of docs/api.md "Errors"; on GraphQL paths into a GraphQL response with
 * extensions.code, which is what GraphQL clients parse. Unknown errors are logged and answered as a bare 500.
 */
export function errorHandler(logger: Logger, isGraphQLPath: (path: string) => boolean): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const appError = toAppError(error);
    if (appError.code === "INTERNAL_SERVER_ERROR") {
      logger.error({ err: error, reqId: req.id }, "unhandled error");
    }
    if (res.headersSent) return;
    res.status(appError.status);
    // 429 and 503 say when to come back (docs/api.md "Errors"); the seconds travel in the error's details.
    const retryAfter = appError.details?.retryAfterSeconds;
    if (typeof retryAfter === "number") res.setHeader("retry-after", String(retryAfter));
    if (isGraphQLPath(req.path)) {
      // The same error body a resolver's AppError gets, details (retryAfterSeconds, ...) included.
      res.json({ errors: [toGraphQLError(appError).toJSON()] });
    } else {
      res.json(toHttpErrorBody(appError));
    }
  };
}

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const parserError = error as BodyParserError;
  if (parserError?.type === "entity.parse.failed")
    return new AppError("BAD_USER_INPUT", "Request body is not valid JSON.");
  if (parserError?.type === "entity.too.large") {
    return new AppError("PAYLOAD_TOO_LARGE", `Request body is larger than the limit of ${parserError.limit} bytes.`);
  }
  if (parserError?.type === "encoding.unsupported" || parserError?.type === "charset.unsupported") {
    return new AppError("UNSUPPORTED_MEDIA_TYPE", "Request body encoding is not supported.");
  }
  // The router's decodeURIComponent of a path parameter, e.g. /gms/entities/%E0%A4%A
  if (error instanceof URIError)
    return new AppError("BAD_USER_INPUT", "The request path is not validly percent-encoded.");
  const unstorable = unstorableValueReason(error);
  if (unstorable !== undefined) {
    return new AppError("BAD_USER_INPUT", `A value in the request cannot be stored: ${unstorable}`);
  }
  // "out of shared memory": PostgreSQL's lock table full; the server's state, not the request's fault
  if (isDatabaseResourceExhausted(error)) return databaseResourceExhausted();
  // PostgreSQL or Redis unreachable (a restart, a failover): 503 with Retry-After, saying which
  const outage = outageError(error);
  if (outage) return outage;
  return new AppError("INTERNAL_SERVER_ERROR", "Internal server error.");
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError("NOT_FOUND", `No route for ${req.method} ${req.path}`));
};
