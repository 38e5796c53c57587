import { AppError } from "./errors";

/** The servers whose absence is an outage a caller can wait out, not a fault of the request or a bug. */
export type Dependency = "PostgreSQL" | "Redis";

/** How long a caller is told to wait before retrying: a PostgreSQL or Redis restart takes about a second. */
export const OUTAGE_RETRY_AFTER_SECONDS = 2;

/**
 * What a caller gets while `which` is unreachable (or, `busy`, too busy to answer in time): 503, Retry-After, and which
 * server it is.
 */
export function serviceUnavailable(which: Dependency, details: Record<string, unknown> = {}, busy = false): AppError {
  const state = busy ? "too busy to answer in time" : "unavailable";
  return new AppError("SERVICE_UNAVAILABLE", `${which} is ${state}; retry shortly.`, {
    ...details,
    retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS,
  });
}

/**
 * PostgreSQL's SQLSTATEs for a server going away or not taking connections: admin_shutdown (57P01, a restart ends
 * every session with it), crash_shutdown, cannot_connect_now (starting up, shutting down), class 08 (connection
 * exceptions), too_many_connections.
 */
const POSTGRES_CODES = new Set(["57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006", "53300"]);
/**
 * Prisma's codes for the same: P1001 can't reach the server, P1002 timed out, P1017 the server closed the connection;
 * and its driver adapter's kinds of them.
 */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1017"]);
/**
 * Prisma's codes for a server too busy to answer in time, which a caller can wait out as well: P1008 operation timed
 * out, P2024 no pool connection in time, and P2028 when it says a transaction ran past its timeout or could not start
 * in time (P2028 also reports misuse of a transaction, a bug, which stays an internal error).
 */
const PRISMA_BUSY_CODES = new Set(["P1008", "P2024"]);
const TRANSACTION_TIMEOUT = /expired transaction|timeout for this transaction|start a transaction in the given time/;
const ADAPTER_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/** Node's socket errors: only the PostgreSQL drivers hand them to a caller (ioredis retries, then says so its way). */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "EAI_AGAIN",
]);
/** pg's own messages when a connection ends or cannot be had, and PostgreSQL's restart texts. */
const POSTGRES_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection due to administrator command|the database system is (starting up|shutting down|in recovery mode)|Can't reach database server|Server has closed the connection/;
/**
 * ioredis's: a producer's command with the connection down (no offline queue), retries used up, a connection closed
 * under a command, a Redis Cluster not (yet) ready or none of its nodes reachable; Redis's own while it loads or fails
 * over.
 */
const REDIS_MESSAGE =
  /Stream isn't writeable and enableOfflineQueue|Cluster isn't ready and enableOfflineQueue|None of startup nodes is available|Failed to refresh slots cache|Reached the max retries per request limit|^Connection is closed\.?$|^Command timed out$|^LOADING |^MASTERDOWN |^CLUSTERDOWN |^TRYAGAIN |^READONLY |Redis did not become ready|Redis is unavailable/;
const SOCKET_MESSAGE = /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH)\b/;

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  errorCode?: unknown;
  message?: unknown;
  stack?: unknown;
  cause?: unknown;
  errors?: unknown;
  thrownValue?: unknown;
  originalError?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown } } };
}

/**
 * Which server `error` says is unreachable, if it is an outage at all: pg's, Prisma's (with its pg driver adapter,
 * whose errors arrive wrapped or, for a failed connect, as the bare socket error object) and ioredis's errors, looked
 * for in the error and what it wraps (`cause`, an AggregateError's `errors`, graphql-js's `originalError` and
 * `thrownValue`). Also a worker's failure reason, which reaches the gateway as text. The one place that knows these
 * shapes: every path asks it.
 */
export function unavailableDependency(error: unknown): Dependency | undefined {
  return classify(error, 0)?.which;
}

/** Which server, and whether it is there but too busy (a timeout) rather than gone. */
function classify(error: unknown, depth: number): { which: Dependency; busy: boolean } | undefined {
  if (depth > 5 || error === null || error === undefined) return undefined;
  if (typeof error === "string") {
    const which = fromMessage(error);
    return which && { which, busy: false };
  }
  if (typeof error !== "object") return undefined;
  const e = error as ErrorShape;
  const message = typeof e.message === "string" ? e.message : "";
  for (const code of [e.code, e.errorCode]) {
    if (typeof code !== "string") continue;
    if (PRISMA_BUSY_CODES.has(code) || (code === "P2028" && TRANSACTION_TIMEOUT.test(message))) {
      return { which: "PostgreSQL", busy: true };
    }
  }
  const which = unreachable(e, message);
  if (which) return { which, busy: false };
  for (const inner of [e.cause, e.originalError, e.thrownValue, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = classify(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}

function unreachable(e: ErrorShape, message: string): Dependency | undefined {
  if (e.name === "MaxRetriesPerRequestError" || REDIS_MESSAGE.test(message)) return "Redis";
  if (typeof e.code === "string") {
    if (POSTGRES_CODES.has(e.code) || PRISMA_CODES.has(e.code)) return "PostgreSQL";
    if (SOCKET_CODES.has(e.code))
      return typeof e.stack === "string" && e.stack.includes("ioredis") ? "Redis" : "PostgreSQL";
  }
  if (typeof e.errorCode === "string" && PRISMA_CODES.has(e.errorCode)) return "PostgreSQL"; // initialization errors
  const adapter = e.meta?.driverAdapterError?.cause;
  if (
    (typeof adapter?.kind === "string" && ADAPTER_KINDS.has(adapter.kind)) ||
    (typeof adapter?.originalCode === "string" && POSTGRES_CODES.has(adapter.originalCode))
  ) {
    return "PostgreSQL";
  }
  if (POSTGRES_MESSAGE.test(message)) return "PostgreSQL";
  return undefined;
}

function fromMessage(text: string): Dependency | undefined {
  if (REDIS_MESSAGE.test(text)) return "Redis";
  if (POSTGRES_MESSAGE.test(text) || SOCKET_MESSAGE.test(text)) return "PostgreSQL";
  return undefined;
}

/** The 503 for `error` when it is an outage, else undefined. */
export function outageError(error: unknown, details?: Record<string, unknown>): AppError | undefined {
  const found = classify(error, 0);
  return found && serviceUnavailable(found.which, details, found.busy);
}
