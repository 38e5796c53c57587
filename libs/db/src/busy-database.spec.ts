import { outageError, unavailableDependency } from "@mdp/core";
import { Prisma } from "./generated/prisma/client";

const known = (code: string, message: string) =>
  new Prisma.PrismaClientKnownRequestError(message, { code, clientVersion: Prisma.prismaVersion.client });

describe("a database too busy to answer in time is an outage to wait out, not an internal error", () => {
  it.each([
    [
      "P2028 transaction past its timeout",
      known(
        "P2028",
        "Transaction API error: Transaction already closed: A query cannot be executed on an expired transaction. The timeout for this transaction was 5000 ms, however 5012 ms passed since the start of the transaction.",
      ),
    ],
    [
      "P2028 transaction could not start",
      known("P2028", "Transaction API error: Unable to start a transaction in the given time."),
    ],
    [
      "P2024 no pool connection in time",
      known("P2024", "Timed out fetching a new connection from the connection pool."),
    ],
    ["P1008 operation timed out", known("P1008", "Operations timed out after `5000` ms")],
  ])("%s: 503 saying PostgreSQL is too busy, with Retry-After", (_name, error) => {
    const outage = outageError(error);
    expect(outage?.code).toBe("SERVICE_UNAVAILABLE");
    expect(outage?.message).toBe("PostgreSQL is too busy to answer in time; retry shortly.");
    expect(outage?.details).toMatchObject({ retryAfterSeconds: 2 });
    // wrapped, as graphql-js hands it over
    expect(outageError({ message: "x", originalError: error })?.code).toBe("SERVICE_UNAVAILABLE");
    expect(unavailableDependency(error)).toBe("PostgreSQL");
  });

  it("leaves a transaction misused by the code an internal error, and an outage an outage", () => {
    expect(
      outageError(
        known(
          "P2028",
          "Transaction API error: Transaction already closed: A commit cannot be executed on a committed transaction",
        ),
      ),
    ).toBeUndefined();
    expect(outageError(known("P1001", "Can't reach database server at `127.0.0.1:1`"))?.message).toBe(
      "PostgreSQL is unavailable; retry shortly.",
    );
  });
});
