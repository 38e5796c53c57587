import type { ApolloServerPlugin, GraphQLResponse } from "@apollo/server";
import type { GraphQLFormattedError } from "graphql";
import { OUTAGE_RETRY_AFTER_SECONDS } from "@mdp/core";

/** The errors a caller is told to wait out, with the HTTP status each answers and the wait when none is given. */
const WAIT_OUT = {
  TOO_MANY_REQUESTS: { status: 429, defaultSeconds: 1 },
  SERVICE_UNAVAILABLE: { status: 503, defaultSeconds: OUTAGE_RETRY_AFTER_SECONDS },
} as const;

function retryAfterSeconds(error: GraphQLFormattedError, defaultSeconds: number): number {
  const details = error.extensions?.details as { retryAfterSeconds?: unknown } | undefined;
  return typeof details?.retryAfterSeconds === "number" ? details.retryAfterSeconds : defaultSeconds;
}

/**
 * GraphQL answers 200 with errors[]; an operation refused for a reason the caller should wait out answers with that
 * reason's HTTP status and `Retry-After` instead, as the HTTP operations do, so clients and proxies that honour the
 * status back off:
 * - any TOO_MANY_REQUESTS error (a rate limit): 429;
 * - only SERVICE_UNAVAILABLE errors (PostgreSQL or Redis unreachable, the database out of lock slots): 503. An
 *   operation that also failed for another reason keeps 200: retrying would not make it succeed.
 * `Retry-After` is the longest `extensions.details.retryAfterSeconds` among them.
 */
export function setRetryAfterStatus(response: GraphQLResponse): void {
  if (response.body.kind !== "single") return;
  const errors = response.body.singleResult.errors ?? [];
  if (errors.length === 0) return;
  const waitOut = (code: keyof typeof WAIT_OUT) => {
    const { status, defaultSeconds } = WAIT_OUT[code];
    const seconds = errors
      .filter((error) => error.extensions?.code === code)
      .map((error) => retryAfterSeconds(error, defaultSeconds));
    response.http.status = status;
    response.http.headers.set("retry-after", String(Math.max(...seconds)));
  };
  if (errors.some((error) => error.extensions?.code === "TOO_MANY_REQUESTS")) waitOut("TOO_MANY_REQUESTS");
  else if (errors.every((error) => error.extensions?.code === "SERVICE_UNAVAILABLE")) waitOut("SERVICE_UNAVAILABLE");
}

/** setRetryAfterStatus as a plugin of its own (the gateway runs it in server.ts's one per-request plugin). */
export const retryAfterStatus: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        setRetryAfterStatus(response);
      },
    };
  },
};
