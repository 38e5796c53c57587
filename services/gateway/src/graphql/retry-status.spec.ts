/** The HTTP status of a GraphQL answer whose errors are to be waited out, through a real Apollo Server. */
import { ApolloServer } from "@apollo/server";
import { AppError, createLogger, serviceUnavailable } from "@mdp/core";
import { formatError } from "./errors";
import { retryAfterStatus } from "./retry-status";

describe("retryAfterStatus", () => {
  const server = new ApolloServer({
    typeDefs: `type Query { ok: String, outage: String, redis: String, limited: String, bad: String }`,
    resolvers: {
      Query: {
        ok: () => "ok",
        outage: () => {
          throw serviceUnavailable("PostgreSQL");
        },
        redis: () => {
          throw new AppError("SERVICE_UNAVAILABLE", "Redis is unavailable; retry shortly.", { retryAfterSeconds: 5 });
        },
        limited: () => {
          throw new AppError("TOO_MANY_REQUESTS", "Rate limit exceeded", { retryAfterSeconds: 42 });
        },
        bad: () => {
          throw new AppError("BAD_USER_INPUT", "no");
        },
      },
    },
    formatError: formatError(createLogger("retry-status-test", "silent")),
    plugins: [retryAfterStatus],
  });
  beforeAll(() => server.start());
  afterAll(() => server.stop());

  const answer = async (query: string) => {
    const res = await server.executeOperation({ query });
    return { status: res.http.status ?? 200, retryAfter: res.http.headers.get("retry-after") ?? null };
  };

  it.each([
    ["no error", "{ ok }", 200, null],
    ["only outages: 503, the longest wait", "{ ok outage redis }", 503, "5"],
    ["an outage with the default wait", "{ outage }", 503, "2"],
    ["an outage beside another failure: 200, a retry would not help", "{ outage bad }", 200, null],
    ["a rate limit, whatever else failed: 429", "{ limited bad outage }", 429, "42"],
    ["another failure only", "{ bad }", 200, null],
  ])("%s", async (_case, query, status, retryAfter) => {
    expect(await answer(query)).toEqual({ status, retryAfter });
  });
});
