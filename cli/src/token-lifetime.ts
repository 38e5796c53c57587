import { CliError, EXIT } from "./exit-codes";
import type { AccessTokenDuration } from "./generated/graphql";

/** What `tokens create` and `service-accounts token` mint without --duration when nothing shorter is needed. */
export const DEFAULT_DURATION: AccessTokenDuration = "ONE_MONTH";

const HOUR = 3_600_000;
/** The lifetimes tried for a default, longest first, none longer than DEFAULT_DURATION. */
const LIFETIMES: ReadonlyArray<[AccessTokenDuration, number]> = [
  ["ONE_MONTH", 30 * 24 * HOUR],
  ["ONE_WEEK", 7 * 24 * HOUR],
  ["ONE_DAY", 24 * HOUR],
  ["ONE_HOUR", HOUR],
];
/**
 * Kept free at the end of the login token's life: the server counts a new token's lifetime from the second it creates
 * it, which may be later than this clock says (a slow request, a clock a little behind).
 */
const MARGIN_MS = 60_000;

/** The claims of a login token this CLI reads without verifying them (the server verifies); undefined: not a JWT. */
function claimsOf(token: string): { exp?: unknown; type?: unknown } | undefined {
  const payload = token.split(".")[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as unknown;
    return typeof claims === "object" && claims !== null ? claims : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The lifetime of a token minted without --duration, and why: the server refuses a token created with a token that
 * would outlive it (docs/authorization.md, "Tokens"), so the default is the longest of a month, a week, a day and an
 * hour that ends before the token this CLI is logged in with. A login token that never expires, or a session (a token
 * created while signed in is the user's own, not bounded by it), leaves the default a month.
 */
export function defaultLifetime(loginToken: string, now = Date.now()): { duration: AccessTokenDuration; why: string } {
  const claims = claimsOf(loginToken);
  if (typeof claims?.exp !== "number" || claims.type === "SESSION") {
    return { duration: DEFAULT_DURATION, why: "the default" };
  }
  const expiresAt = claims.exp * 1000;
  const left = expiresAt - now - MARGIN_MS;
  const fits = LIFETIMES.find(([, ms]) => ms <= left);
  const until = new Date(expiresAt).toISOString();
  if (!fits) {
    throw new CliError(
      `the token you are logged in with expires at ${until}, in less than an hour: a token created with it may not ` +
        `outlive it, so none can be created; log in with a longer-lived token (mdp login)`,
      EXIT.USAGE,
    );
  }
  const [duration] = fits;
  return duration === DEFAULT_DURATION
    ? { duration, why: "the default" }
    : { duration, why: `the longest that ends before the token you are logged in with, which expires at ${until}` };
}
