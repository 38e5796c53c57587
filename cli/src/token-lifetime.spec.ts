import { CliError, EXIT } from "./exit-codes";
import { defaultLifetime } from "./token-lifetime";

/** A token of the server's form (header.claims.signature); only its claims are read here. */
const tokenWith = (claims: Record<string, unknown>) =>
  `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.signature`;

describe("defaultLifetime (tokens create, service-accounts token without --duration)", () => {
  const now = Date.UTC(2026, 0, 1);
  const expiringIn = (ms: number) => tokenWith({ sub: "urn:li:corpuser:admin", exp: (now + ms) / 1000 });
  const DAY = 86_400_000;

  it("is a month when the login token lives longer, never expires, or is a session", () => {
    expect(defaultLifetime(expiringIn(365 * DAY), now)).toEqual({ duration: "ONE_MONTH", why: "the default" });
    expect(defaultLifetime(tokenWith({ sub: "urn:li:corpuser:admin" }), now).duration).toBe("ONE_MONTH");
    expect(defaultLifetime(tokenWith({ type: "SESSION", exp: (now + DAY) / 1000 }), now).duration).toBe("ONE_MONTH");
  });

  it("is the longest that ends before the login token, saying when that one expires (the README's month-long token)", () => {
    const lastDays = defaultLifetime(expiringIn(30 * DAY - 5_000), now);
    expect(lastDays).toEqual({
      duration: "ONE_WEEK",
      why: `the longest that ends before the token you are logged in with, which expires at ${new Date(now + 30 * DAY - 5_000).toISOString()}`,
    });
    expect(defaultLifetime(expiringIn(3 * DAY), now).duration).toBe("ONE_DAY");
    expect(defaultLifetime(expiringIn(2 * 3_600_000), now).duration).toBe("ONE_HOUR");
  });

  it("refuses as a usage error, saying why, when the login token has less than an hour left", () => {
    let error: unknown;
    try {
      defaultLifetime(expiringIn(3_600_000), now);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.USAGE);
    expect((error as Error).message).toContain("in less than an hour");
  });
});
