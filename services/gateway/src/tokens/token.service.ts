import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  abbreviated,
  badInput,
  isoDurationSeconds,
  forbidden,
  MAX_TOKEN_CHAIN_DEPTH,
  notFound,
  missingFrom,
  requireLength,
  SYSTEM_ACTOR_URN,
  type Config,
  type Principal,
} from "@mdp/core";
import type { DurationPolicy } from "@mdp/db";
import { SERVICE_ACCOUNT_URN_PREFIX } from "./service-account-urn";
import type { Actor } from "../auth/actor";
import { safeEqual } from "../auth/constant-time";
import { pageInput } from "../graphql/paging";
import { idField, parseArgs, parsedBy, rule, textField, urnField } from "../http/validate";
import type { RateLimits } from "../http/rate-limits";
import type { PolicyEngine } from "../policies/policy-engine";
import { parseScopes, withImplied, withinScopes, type Privilege } from "../policies/privileges";
import { Hs256, JwtError, type AccessTokenClaims } from "./jwt";
import { hashToken } from "./token-hash";
import { POLICY_FIELD, tokenFilters } from "./token-filters";
import type { TokenMetadata, TokenStore } from "./token.store";
import type { TokenVerifier } from "./token.verifier";

export type { TokenMetadata } from "./token.store";

const HOUR = 3600;
const DAY = 24 * HOUR;
/** The duration enum's lifetimes, in seconds; the allowed-durations policy judges them as it judges durationIso. */
const DURATIONS = {
  ONE_HOUR: HOUR,
  ONE_DAY: DAY,
  ONE_WEEK: 7 * DAY,
  ONE_MONTH: 30 * DAY,
  THREE_MONTHS: 90 * DAY,
  SIX_MONTHS: 180 * DAY,
  ONE_YEAR: 365 * DAY,
  NO_EXPIRY: null,
} as const;
export type AccessTokenDuration = keyof typeof DURATIONS;

export const TOKEN_ISSUER = "metadata-admin";
export const TOKEN_VERSION = 2;

/** ACCESS_TOKEN_ALLOWED_DURATIONS, parsed by the config. */
type AllowedDurations = Config["ACCESS_TOKEN_ALLOWED_DURATIONS"];

/** The lifetime asked for: its seconds (null: never expires), and how it was asked for (the audit, messages). */
interface Lifetime {
  seconds: number | null;
  /** `input.duration` or `input.durationIso` */
  field: string;
  asked: string;
}

/**
 * createAccessToken's (and getAccessToken's) input; `allowNoExpiry` is ACCESS_TOKEN_ALLOW_NO_EXPIRY, `allowed`
 * ACCESS_TOKEN_ALLOWED_DURATIONS. Which actor,
 * scopes and duration the caller may give depends on who it is: checked once this has parsed (create).
 */
const createTokenArgs = (allowNoExpiry: boolean, allowed: AllowedDurations) =>
  z.object({
    input: z
      .object({
        /** SERVICE_ACCOUNT: a service account's token (actorUrn a live service account), MANAGE_SERVICE_ACCOUNTS */
        type: z.enum(["PERSONAL", "SERVICE_ACCOUNT"]),
        actorUrn: urnField("corpuser"),
        /**
         * The privileges the token is limited to (ours or DataHub's spellings, 1 to MAX_TOKEN_SCOPES), sorted. Absent:
         * unscoped, or, when the caller itself uses a scoped token, that token's scopes.
         */
        scopes: z
          .array(z.string())
          .transform(parsedBy((at, names: string[]) => parseScopes(at, names)))
          .nullish(),
        /** required (GraphQL's type leaves it optional for the deprecated getAccessToken, which names its tokens) */
        name: z
          .string()
          .nullish()
          .refine(
            ...rule((at, name: string | null | undefined) => {
              if (name == null) throw badInput(`${at} is required: a name for the token`);
              requireLength(at, name.trim(), { min: 1, max: 256 });
            }),
          )
          .transform((name) => name!.trim()),
        description: textField({ max: 2000 })
          .nullish()
          .transform((description) => description ?? null),
        duration: z
          .enum(Object.keys(DURATIONS) as [AccessTokenDuration, ...AccessTokenDuration[]])
          .nullish()
          .refine(
            ...rule((at, duration: AccessTokenDuration | null | undefined) => {
              if (duration == null) return;
              const seconds = DURATIONS[duration];
              if (seconds === null && !allowNoExpiry) {
                throw badInput(`${at} NO_EXPIRY is not allowed on this server (ACCESS_TOKEN_ALLOW_NO_EXPIRY=false)`);
              }
              if (seconds !== null) requireAllowed(at, duration, seconds, allowed);
            }),
          ),
        /** the lifetime as ISO-8601 (PT1H, P30D, P1M = 30 days, P1Y = 365 days); exactly one of it and duration */
        durationIso: z
          .string()
          .nullish()
          .refine(
            ...rule((at, iso: string | null | undefined) => {
              if (iso == null) return;
              const seconds = isoDurationSeconds(iso);
              if (seconds === null) {
                throw badInput(`${at} '${abbreviated(iso)}' is not an ISO-8601 duration (e.g. PT1H, P30D)`);
              }
              requireAllowed(at, iso, seconds, allowed);
            }),
          ),
      })
      .transform(
        parsedBy((_at, { duration, durationIso, ...input }) => {
          if ((duration == null) === (durationIso == null)) {
            throw badInput(
              `input.duration and input.durationIso: give exactly one of them (${duration == null ? "neither" : "both"} ` +
                `given), the duration enum (e.g. ONE_MONTH) or an ISO-8601 duration (e.g. P30D)`,
            );
          }
          const lifetime: Lifetime =
            duration != null
              ? { seconds: DURATIONS[duration], field: "input.duration", asked: duration }
              : { seconds: isoDurationSeconds(durationIso!), field: "input.durationIso", asked: durationIso!.trim() };
          return { ...input, duration: duration ?? undefined, durationIso: durationIso ?? undefined, lifetime };
        }),
      ),
  });

/** A lifetime not in ACCESS_TOKEN_ALLOWED_DURATIONS is refused naming the list. */
function requireAllowed(at: string, asked: string, seconds: number, allowed: AllowedDurations): void {
  if (allowed.some((d) => d.seconds === seconds)) return;
  throw badInput(
    `${at} ${abbreviated(asked)} is not an allowed token lifetime on this server: ACCESS_TOKEN_ALLOWED_DURATIONS=` +
      `${allowed.map((d) => d.iso).join(",")} (P1M counts 30 days, P1Y 365)`,
  );
}

const listTokensArgs = pageInput({ filters: tokenFilters });

const revokeTokenArgs = z.object({ tokenId: idField() });
const revokeTokensArgs = z.object({ actorUrn: urnField("corpuser") });

/**
 * Personal access tokens (docs/api.md "Access tokens"): HS256 JWTs of which only a salted hash is stored. Every operation
 * needs at least GENERATE_PERSONAL_ACCESS_TOKENS; acting on other users' tokens needs MANAGE_ACCESS_TOKENS.
 */
export class TokenService {
  private readonly jwt: Hs256;
  private readonly createArgs: ReturnType<typeof createTokenArgs>;

  constructor(
    private readonly store: TokenStore,
    private readonly verifier: Pick<TokenVerifier, "revoked" | "revokedAllOf">,
    private readonly policies: PolicyEngine,
    private readonly config: Pick<
      Config,
      | "TOKEN_SIGNING_KEY"
      | "TOKEN_SALT"
      | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
      | "ACCESS_TOKEN_ALLOWED_DURATIONS"
      | "ROOT_USER_URN"
    >,
    /** RATE_LIMIT_TOKEN_MINTS_PER_MINUTE, met once the request has passed its checks (a refusal costs nothing) */
    private readonly rateLimits?: Pick<RateLimits, "consume">,
  ) {
    this.jwt = new Hs256(config.TOKEN_SIGNING_KEY);
    this.createArgs = createTokenArgs(config.ACCESS_TOKEN_ALLOW_NO_EXPIRY, config.ACCESS_TOKEN_ALLOWED_DURATIONS);
  }

  async create(actor: Actor, args: unknown): Promise<{ accessToken: string; metadata: TokenMetadata }> {
    // A service account's token needs MANAGE_SERVICE_ACCOUNTS alone (DataHub's rule), a personal one the token API's.
    const forServiceAccount = (args as { input?: { type?: unknown } } | null)?.input?.type === "SERVICE_ACCOUNT";
    if (forServiceAccount) {
      await this.policies.require(actor, "MANAGE_SERVICE_ACCOUNTS", "generate access tokens for service accounts");
    } else {
      await this.requireTokenApi(actor, "generate access tokens");
    }
    const { input } = parseArgs(this.createArgs, args);
    const { name } = input;
    if (!forServiceAccount && input.actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "generate access tokens for other users");
    }
    // After the privilege check, so a caller without it hears the refusal DataHub's clients expect.
    this.requireMintableActor(actor, input.actorUrn);
    await this.requireTypeOfActor(input.type, input.actorUrn);
    const scopes = this.scopesOfNewToken(actor, input.scopes);
    await this.requireNoStrongerThanMinter(actor, input.actorUrn, scopes);
    await this.requireScopesHeld(actor, input.actorUrn, scopes);
    const { seconds } = input.lifetime;
    requireChainRoom(actor);
    // The creation time to the millisecond, so the list (newest first) keeps the order of tokens made within one
    // second; the claims and the expiry to the second, so the stored expiry and the token's exp claim are the same
    // instant: a token expires `duration` after the second it was issued in.
    const createdAt = Date.now();
    const issuedAt = Math.floor(createdAt / 1000);
    const exp = seconds === null ? undefined : issuedAt + seconds;
    requireWithinParentExpiry(actor, input.lifetime, exp);
    await this.rateLimits?.consume(actor, "tokenMints");

    const id = randomUUID();
    const accessToken = this.jwt.sign({
      sub: input.actorUrn,
      jti: id,
      type: input.type,
      iat: issuedAt,
      iss: TOKEN_ISSUER,
      ver: TOKEN_VERSION,
      ...(exp === undefined ? {} : { exp }),
    });
    const metadata: TokenMetadata = {
      urn: this.store.urnOf(id),
      id,
      name,
      description: input.description,
      actorUrn: input.actorUrn,
      ownerUrn: actor.urn,
      createdAt,
      expiresAt: exp === undefined ? null : exp * 1000,
      lastUsedAt: null,
      scopes: scopes ?? null,
      // The token the caller authenticated with: the new one holds, at every use, no more than it does then.
      parentTokenId: actor.via === "token" ? (actor.tokenId ?? null) : null,
    };
    await this.store.insert({
      type: input.type,
      metadata,
      tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
      exp,
      // The details recordAudit would write.
      audit: {
        actorUrn: actor.urn,
        details: {
          name,
          actorUrn: input.actorUrn,
          ...(input.duration !== undefined ? { duration: input.duration } : { durationIso: input.lifetime.asked }),
          scopes: scopes ?? null,
          ...(metadata.parentTokenId !== null && { parentTokenId: metadata.parentTokenId }),
          via: actor.via,
        },
      },
    });
    return { accessToken, metadata };
  }

  /**
   * The two principals that hold every privilege through the built-in policy are not minted for like other users. The
   * system actor is the system client's own identity: it authenticates with the client's credentials and has no
   * tokens (a token for it would be a second, revocable-only-by-hand system client). The root user's tokens are minted
   * only by the root user itself (its own token, or the system client naming it): no MANAGE_ACCESS_TOKENS holder
   * mints a token that reads as root's, whatever its scopes.
   */
  private requireMintableActor(caller: Actor, actorUrn: string): void {
    if (actorUrn === SYSTEM_ACTOR_URN) {
      throw badInput(
        `input.actorUrn ${SYSTEM_ACTOR_URN} is the system actor, the system client's own identity: it has no access ` +
          `tokens (the system client authenticates with its credentials)`,
      );
    }
    if (actorUrn === this.config.ROOT_USER_URN && caller.urn !== actorUrn) {
      throw forbidden(
        `${caller.urn} is unauthorized to generate access tokens for ${actorUrn}, the root user: only the root user ` +
          `mints its own tokens.`,
      );
    }
  }

  /**
   * A SERVICE_ACCOUNT token is for a service account (one deleted meanwhile is refused by the insert, under its
   * lock), and a service account has no PERSONAL tokens: its tokens are told apart by type (their minter does not
   * bound them, boundingMinter). Only urns of the service accounts' form are looked up.
   */
  private async requireTypeOfActor(type: "PERSONAL" | "SERVICE_ACCOUNT", actorUrn: string): Promise<void> {
    const account = actorUrn.startsWith(SERVICE_ACCOUNT_URN_PREFIX) && (await this.store.isServiceAccount(actorUrn));
    if (type === "SERVICE_ACCOUNT" && !account) {
      throw badInput(
        `input.actorUrn ${abbreviated(actorUrn)} is not a service account: SERVICE_ACCOUNT tokens are for the ` +
          `accounts createServiceAccount makes (urn:li:corpuser:service_<uuid>)`,
      );
    }
    if (type === "PERSONAL" && account) {
      throw badInput(`input.type PERSONAL: ${actorUrn} is a service account, whose tokens are of type SERVICE_ACCOUNT`);
    }
  }

  /**
   * The new token's scopes: those asked for (parsed); none asked for, the caller's own token's (a scoped token mints
   * tokens of at most its scopes, so a leaked read-only token cannot be traded for a stronger one); else unscoped.
   */
  private scopesOfNewToken(minter: Actor, requested: Privilege[] | null | undefined): Privilege[] | undefined {
    const scopes = requested ?? (minter.scopes && [...minter.scopes]);
    if (scopes === undefined || minter.scopes === undefined) return scopes;
    const allowed = withImplied(minter.scopes);
    const wider = scopes.filter((p) => !allowed.has(p));
    if (wider.length > 0) {
      throw forbidden(
        `${minter.urn} is unauthorized to generate an access token scoped to ${wider.join(", ")}: the access token ` +
          `in use is scoped to ${minter.scopes.join(", ")}, and a token it creates may have no other scopes.`,
      );
    }
    return scopes;
  }

  /**
   * Each scope must be a privilege the token's actor holds now (it would grant nothing, and the token would read as
   * stronger than it is). For another user the refusal does not say which, as requireNoStrongerThanMinter does not.
   */
  private async requireScopesHeld(minter: Actor, actorUrn: string, scopes: Privilege[] | undefined): Promise<void> {
    if (scopes === undefined) return;
    const lacking = missingFrom(await this.policies.grantsOf(actorUrn), new Set(scopes));
    if (lacking.length === 0) return;
    throw forbidden(
      actorUrn === minter.urn
        ? `${minter.urn} is unauthorized to generate an access token scoped to ${lacking.join(", ")}: you do not hold ` +
            `${lacking.length === 1 ? "it" : "them"}, and a token may have only privileges of its actor.`
        : `${minter.urn} is unauthorized to generate an access token for ${actorUrn} with these scopes: it does not ` +
            `hold them all, and a token may have only privileges of its actor.`,
    );
  }

  /**
   * A token never carries more power than the request that mints it: what it may do (its actor's privileges, within
   * its scopes) must be within what the minter's request may now (PolicyEngine.privilegesOf: the minter's own token's
   * chain included), or MANAGE_ACCESS_TOKENS would mint a root token, and a weak token would mint a strong one. This
   * is the early, explicit refusal; the bound itself holds at every use (the new token's minter and parent are links
   * of its chain), so a privilege the minter loses later leaves the token too. The system client is no exception:
   * acting for a user it mints as that user (acting for nobody, as the system actor, which holds every privilege).
   * For another user the refusal does not list the privileges, which would tell the minter what that user holds.
   */
  private async requireNoStrongerThanMinter(
    minter: Actor,
    actorUrn: string,
    scopes: Privilege[] | undefined,
  ): Promise<void> {
    // The common case, a user's own unscoped token or the system client minting for itself: nothing to compare.
    if (actorUrn === minter.urn && minter.minterUrn === undefined && minter.parent === undefined && !minter.scopes) {
      return;
    }
    const [held, wanted] = await Promise.all([
      this.policies.privilegesOf(minter),
      this.policies.grantsOf(actorUrn).then((grants) => withinScopes(grants, scopes)),
    ]);
    const lacking = missingFrom(held, wanted);
    if (lacking.length === 0) return;
    if (actorUrn !== minter.urn) {
      throw forbidden(
        `${minter.urn} is unauthorized to generate access tokens for ${actorUrn}: it holds privileges you do not.`,
      );
    }
    throw forbidden(
      `${minter.urn} is unauthorized to generate this access token: the access token in use does not hold ` +
        `${lacking.join(", ")} (its creator or the token it was created with does not), and a token it creates may ` +
        `hold no more than it; name scopes within what it holds.`,
    );
  }

  async list(actor: Actor, args: unknown) {
    await this.requireTokenApi(actor, "list access tokens");
    const { start, count, filters } = parseArgs(listTokensArgs, args).input;
    if (!(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
      // A negated filter on yourself lists everyone else's: only a plain equality on your own urn is "your tokens".
      const ownOnly = filters.some(
        (f) =>
          "values" in f &&
          !f.negated &&
          (f.field === "actorUrn" || f.field === "ownerUrn") &&
          f.values.length === 1 &&
          f.values[0] === actor.urn,
      );
      if (!ownOnly) {
        throw forbidden(
          `${actor.urn} is unauthorized to list access tokens of other users: filter on actorUrn or ownerUrn equal to your own urn, or hold MANAGE_ACCESS_TOKENS.`,
        );
      }
    }
    const { total, tokens } = await this.store.page(
      filters.map((f) =>
        f.field === POLICY_FIELD ? { field: "durationPolicy", outside: f.outside, ...this.durationPolicy() } : f,
      ),
      new Date(),
      start,
      count,
    );
    return { start, count: tokens.length, total, tokens };
  }

  async revoke(actor: Actor, args: unknown): Promise<boolean> {
    await this.requireTokenApi(actor, "revoke access tokens");
    const { tokenId } = parseArgs(revokeTokenArgs, args);
    const stored = await this.store.find(tokenId);
    // Whether the caller may revoke it is settled before whether it exists is told: without MANAGE_ACCESS_TOKENS, an
    // unknown id gets the same 403 as another user's token.
    const own = stored !== null && (stored.metadata.ownerUrn === actor.urn || stored.metadata.actorUrn === actor.urn);
    if (!own && !(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
      throw forbidden(
        `${actor.urn} is unauthorized to revoke access token ${tokenId}: it is not one of yours, and revoking ` +
          `other users' tokens needs MANAGE_ACCESS_TOKENS.`,
      );
    }
    if (!stored) throw notFound(`Access token ${tokenId} does not exist`);
    // From here on the row's id, not the one given: PostgreSQL matched it in any letter case, while the caches of
    // every replica know the token by the lower-case id of its claims.
    const { id } = stored.metadata;
    if (!stored.revoked) await this.store.revoke(stored.metadata, actor);
    // The commit above is what revokes; this only shortens the caches, bounded, never failing the call.
    await this.verifier.revoked(id);
    return true;
  }

  /**
   * Revokes every live token acting for `actorUrn` at once (one transaction, audited), and tells every replica in one
   * message; returns how many. The user itself may; anyone else needs MANAGE_ACCESS_TOKENS. Checked before anything
   * is looked up, so the answer says nothing of another user's tokens to a caller who may not revoke them.
   */
  async revokeAll(actor: Actor, args: unknown): Promise<number> {
    await this.requireTokenApi(actor, "revoke access tokens");
    const { actorUrn } = parseArgs(revokeTokensArgs, args);
    if (actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "revoke the access tokens of other users");
    }
    const revoked = await this.store.revokeAllOf(actorUrn, actor);
    // As for one token: the commit revokes, this only shortens every replica's cache (bounded, never failing).
    if (revoked.length > 0) await this.verifier.revokedAllOf(actorUrn);
    return revoked.length;
  }

  /**
   * revokeAccessTokensOutsidePolicy: revokes every live token, of any user, whose lifetime the current policy
   * (ACCESS_TOKEN_ALLOWED_DURATIONS, ACCESS_TOKEN_ALLOW_NO_EXPIRY) does not allow — what listAccessTokens'
   * outsideDurationPolicy filter lists — in one transaction, audited per token as revokeAccessTokens audits; then
   * every replica is told, one message per user whose tokens went. Returns the ids revoked. MANAGE_ACCESS_TOKENS.
   */
  async revokeOutsidePolicy(actor: Actor): Promise<string[]> {
    await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "revoke the access tokens of other users");
    const revoked = await this.store.revokeOutside(this.durationPolicy(), actor);
    // As for revokeAccessTokens: the commit revokes, this only shortens every replica's cache (bounded, never failing).
    for (const actorUrn of new Set(revoked.map((t) => t.actorUrn))) await this.verifier.revokedAllOf(actorUrn);
    return revoked.map((t) => t.id);
  }

  private durationPolicy(): DurationPolicy {
    return {
      allowedSeconds: this.config.ACCESS_TOKEN_ALLOWED_DURATIONS.map((d) => d.seconds),
      allowNoExpiry: this.config.ACCESS_TOKEN_ALLOW_NO_EXPIRY,
    };
  }

  async metadataFor(actor: Actor, token: string): Promise<TokenMetadata> {
    await this.requireTokenApi(actor, "read access token metadata");
    // The token asked about is not the caller's credential: one that fails its checks is unknown here, not a reason to
    // answer UNAUTHENTICATED (which clients take to mean their own session has ended).
    let claims: AccessTokenClaims;
    try {
      claims = this.jwt.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw notFound("Access token does not exist");
      throw error;
    }
    // Checked on the signed claims, before the row is looked up: the answer to another user's token does not depend
    // on whether it still exists. A row whose actor differs from its claims' is refused below as unknown.
    if (claims.sub !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "read the metadata of other users' access tokens");
    }
    const row = await this.store.find(claims.jti);
    if (
      !row ||
      row.metadata.actorUrn !== claims.sub ||
      !safeEqual(row.tokenHash, hashToken(token, this.config.TOKEN_SALT))
    ) {
      throw notFound("Access token does not exist");
    }
    // Its metadata would read as a live token's (it has no field for revocation); DataHub deletes a revoked token's.
    if (row.revoked) throw notFound("Access token has been revoked");
    return row.metadata;
  }

  private async requireTokenApi(actor: Actor, operation: string): Promise<void> {
    await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", operation);
  }
}

/** How many tokens a principal's chain holds: its own, and each parent's. */
function chainLength(principal: Principal): number {
  let length = principal.tokenId === undefined ? 0 : 1;
  for (let parent = principal.parent; parent !== undefined; parent = parent.parent) length++;
  return length;
}

/**
 * A token minted with a token is one link longer than the caller's chain, which every use of it intersects: at most
 * MAX_TOKEN_CHAIN_DEPTH tokens in all. 400: the credential in use, not a privilege, is what cannot mint.
 */
function requireChainRoom(actor: Actor): void {
  if (actor.via !== "token" || chainLength(actor) < MAX_TOKEN_CHAIN_DEPTH) return;
  throw badInput(
    `the access token in use is the last of a chain of ${MAX_TOKEN_CHAIN_DEPTH} tokens, each created with the one ` +
      `before (the limit, MAX_TOKEN_CHAIN_DEPTH): it cannot create another; create this one with a token earlier ` +
      `in the chain`,
  );
}

/**
 * A token minted with a token expires no later than it (NO_EXPIRY only under a token that never expires): otherwise
 * it would outlive what it was minted under. 400 naming input.duration and when the token in use expires.
 */
function requireWithinParentExpiry(actor: Actor, lifetime: Lifetime, exp: number | undefined): void {
  const parentExp = actor.tokenExpiresAt;
  if (actor.via !== "token" || parentExp === undefined) return;
  if (exp !== undefined && exp * 1000 <= parentExp) return;
  throw badInput(
    `${lifetime.field} ${abbreviated(lifetime.asked)} would outlive the access token in use, which expires at ` +
      `${new Date(parentExp).toISOString()}: a token created with another may not expire after it; choose a shorter ` +
      `duration, or create it with a longer-lived token`,
  );
}
