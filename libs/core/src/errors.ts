/** Every error a client can see. One code per kind; the HTTP and GraphQL mappings live here and nowhere else. */
export const ERROR_CODES = {
  BAD_USER_INPUT: { status: 400, graphql: "BAD_USER_INPUT" },
  UNAUTHENTICATED: { status: 401, graphql: "UNAUTHENTICATED" },
  FORBIDDEN: { status: 403, graphql: "FORBIDDEN" },
  NOT_FOUND: { status: 404, graphql: "NOT_FOUND" },
  METHOD_NOT_ALLOWED: { status: 405, graphql: "BAD_USER_INPUT" },
  CONFLICT: { status: 409, graphql: "CONFLICT" },
  PAYLOAD_TOO_LARGE: { status: 413, graphql: "BAD_USER_INPUT" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, graphql: "BAD_USER_INPUT" },
  TOO_MANY_REQUESTS: { status: 429, graphql: "TOO_MANY_REQUESTS" },
  INTERNAL_SERVER_ERROR: { status: 500, graphql: "INTERNAL_SERVER_ERROR" },
  SERVICE_UNAVAILABLE: { status: 503, graphql: "SERVICE_UNAVAILABLE" },
  GATEWAY_TIMEOUT: { status: 504, graphql: "GATEWAY_TIMEOUT" },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The one error class. `message` is shown to clients, so it never holds secrets or stack traces. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "AppError";
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const badInput = (message: string, details?: Record<string, unknown>) =>
  new AppError("BAD_USER_INPUT", message, details);
export const notFound = (message: string) => new AppError("NOT_FOUND", message);
export const forbidden = (message: string) => new AppError("FORBIDDEN", message);
export const conflict = (message: string) => new AppError("CONFLICT", message);
export const unauthenticated = (message: string) => new AppError("UNAUTHENTICATED", message);

/** The JSON body of an HTTP error (docs/api.md "Errors"). */
export interface HttpErrorBody {
  status: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export function toHttpErrorBody(error: AppError): HttpErrorBody {
  const body: HttpErrorBody = { status: error.status, code: error.code, message: error.message };
  if (error.details) body.details = error.details;
  return body;
}
