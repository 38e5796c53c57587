import { z } from "zod";
import { bool, int } from "./config-fields";
import { isoDurationSeconds } from "./iso-duration";

// Development defaults: usable out of the box on a laptop, refused when NODE_ENV=production.
export const DEVELOPMENT_SECRETS = {
  TOKEN_SIGNING_KEY: "development-signing-key-not-for-production-use",
  TOKEN_SALT: "development-token-salt",
  SYSTEM_CLIENT_ID: "__datahub_system",
  SYSTEM_CLIENT_SECRET: "development-system-client-secret",
} as const;

/** Authentication and access tokens: the system client, the root user, signing, lifetimes, usage, rotation. */
export const tokenSettings = {
  /** false trusts X-Platform-Actor alone: local development only */
  AUTH_ENABLED: bool.default(true),
  SYSTEM_CLIENT_ID: z.string().min(1).default(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID),
  SYSTEM_CLIENT_SECRET: z
    .string()
    .min(16, { error: "must be at least 16 characters" })
    .default(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET),
  /** the user holding every privilege through a built-in policy */
  ROOT_USER_URN: z
    .string()
    .regex(/^urn:[^:]+:corpuser:.+$/, { error: "must be a user urn like urn:li:corpuser:admin" })
    .default("urn:li:corpuser:admin"),
  /** HS256 key for access tokens */
  TOKEN_SIGNING_KEY: z
    .string()
    .min(32, { error: "must be at least 32 characters" })
    .default(DEVELOPMENT_SECRETS.TOKEN_SIGNING_KEY),
  /** salt of the stored token hashes */
  TOKEN_SALT: z.string().min(16, { error: "must be at least 16 characters" }).default(DEVELOPMENT_SECRETS.TOKEN_SALT),
  URN_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_-]*$/, { error: "must be letters, digits, '_' or '-'" })
    .default("li"),
  ACCESS_TOKEN_ALLOW_NO_EXPIRY: bool.default(false),
  /**
   * how long a SESSION token lives (POST /auth/generateSessionTokenForUser, DataHub's frontend signing a user in):
   * DataHub's `authentication.sessionTokenDurationMs` setting, its variable and its default (a day); at least a minute,
   * at most a year
   */
  SESSION_TOKEN_DURATION_MS: int(60_000, 31_536_000_000).default(86_400_000),
  /**
   * revokes every live access token neither used nor created for this many days (a cluster-wide chore of the gateways,
   * hourly; each revocation audited, reason `idle`); unset: tokens are never revoked for idleness
   */
  ACCESS_TOKEN_IDLE_REVOKE_DAYS: int(1, 36_500).optional(),
  /**
   * records what each access token is used for (its last clients, requests by operation: AccessTokenMetadata.usage);
   * false leaves usage empty (lastUsedAt is kept either way). bench/tokens compares the two.
   */
  ACCESS_TOKEN_USAGE_RECORDING: bool.default(true),
  /**
   * the lifetimes createAccessToken may mint, ISO-8601, comma-separated (P1M = 30 days, P1Y = 365 days), whether asked
   * for as durationIso or as the duration enum; tokens minted before a change can be listed and revoked
   * (listAccessTokens' outsideDurationPolicy filter, revokeAccessTokensOutsidePolicy). NO_EXPIRY is
   * ACCESS_TOKEN_ALLOW_NO_EXPIRY's.
   */
  ACCESS_TOKEN_ALLOWED_DURATIONS: z
    .string()
    .default("PT1H,P1D,P7D,P30D,P90D,P180D,P365D")
    .transform((text, ctx) => {
      const allowed = text
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "")
        .map((iso) => ({ iso: iso.toUpperCase(), seconds: isoDurationSeconds(iso) }));
      const bad = allowed.filter((d) => d.seconds === null).map((d) => d.iso);
      if (allowed.length === 0 || bad.length > 0) {
        ctx.addIssue({
          code: "custom",
          message:
            allowed.length === 0
              ? "must list at least one ISO-8601 duration, e.g. PT1H,P30D"
              : `${bad.join(", ")}: not ISO-8601 durations (e.g. PT1H, P30D)`,
        });
        return z.NEVER;
      }
      return allowed as Array<{ iso: string; seconds: number }>;
    }),
  /**
   * the absolute lifetime of a rotation family (a token and all its successors), in days from its first token's
   * creation: rotation never extends a family past it, so a stolen token cannot renew itself for ever. Unset: the
   * longest of ACCESS_TOKEN_ALLOWED_DURATIONS, rounded up to whole days (loadConfig). Never-expiring families have none.
   */
  ACCESS_TOKEN_FAMILY_MAX_DAYS: int(1, 36_500).optional(),
};
