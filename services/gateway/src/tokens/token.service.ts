import { randomUUID } from "node:crypto";
import { z } from "zod";
import { notFound, forbidden, type Config } from "@mdp/core";
import type { DurationPolicy } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { safeEqual } from "../auth/constant-time";
import { pageInput } from "../shared/paging";
import { idField, parseArgs, urnField } from "../shared/validate";
import type { RateLimits } from "../shared/rate-limits";
import type { PolicyEngine } from "../policies/policy-engine";
import { Hs256, JwtError, type AccessTokenClaims } from "./jwt";
import { hashToken } from "./token-hash";
import { requireMayEndPlatformAccess } from "./platform-principals";
import { POLICY_FIELD, tokenFilters } from "./token-filters";
import {
  createTokenArgs,
  requireChainRoom,
  requireWithinParentExpiry,
  TokenMintingPolicy,
} from "./token-minting-policy";
import type { TokenMetadata, TokenStore } from "./token.store";
import type { TokenVerifier } from "./token.verifier";

export type { TokenMetadata } from "./token.store";

export const TOKEN_ISSUER = "metadata-admin";
export const TOKEN_VERSION = 2;

/** The arguments of the operations whose privilege and contract their resolvers declare (tokens.graphql.ts). */
export const listTokensArgs = pageInput({ filters: tokenFilters });
export const revokeTokenArgs = z.object({ tokenId: idField() });
export const revokeTokensArgs = z.object({ actorUrn: urnField("corpuser") });
export const tokenMetadataArgs = z.object({ token: z.string() });

export interface TokenServiceDeps {
  store: TokenStore;
  verifier: Pick<TokenVerifier, "revoked" | "revokedAllOf">;
  policies: PolicyEngine;
  config: Pick<
    Config,
    | "TOKEN_SIGNING_KEY"
    | "TOKEN_SALT"
    | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
    | "ACCESS_TOKEN_ALLOWED_DURATIONS"
    | "ROOT_USER_URN"
  >;
  /** RATE_LIMIT_TOKEN_MINTS_PER_MINUTE, met once the request has passed its checks (a refusal costs nothing) */
  rateLimits?: Pick<RateLimits, "consume">;
}

/**
 * Personal access tokens (docs/api.md "Access tokens"): HS256 JWTs of which only a salted hash is stored. Every operation
 * needs at least GENERATE_PERSONAL_ACCESS_TOKENS; acting on other users' tokens needs MANAGE_ACCESS_TOKENS.
 */
export class TokenService {
  private readonly jwt: Hs256;
  private readonly createArgs: ReturnType<typeof createTokenArgs>;
  private readonly minting: TokenMintingPolicy;

  private readonly store: TokenStore;
  private readonly verifier: TokenServiceDeps["verifier"];
  private readonly policies: PolicyEngine;
  private readonly config: TokenServiceDeps["config"];
  private readonly rateLimits: TokenServiceDeps["rateLimits"];

  constructor(deps: TokenServiceDeps) {
    this.store = deps.store;
    this.verifier = deps.verifier;
    this.policies = deps.policies;
    this.config = deps.config;
    this.rateLimits = deps.rateLimits;
    this.jwt = new Hs256(deps.config.TOKEN_SIGNING_KEY);
    this.createArgs = createTokenArgs(
      deps.config.ACCESS_TOKEN_ALLOW_NO_EXPIRY,
      deps.config.ACCESS_TOKEN_ALLOWED_DURATIONS,
    );
    this.minting = new TokenMintingPolicy(deps.store, deps.policies, deps.config);
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
    this.minting.requireMintableActor(actor, input.actorUrn);
    await this.minting.requireTypeOfActor(input.type, input.actorUrn);
    const scopes = this.minting.scopesOfNewToken(actor, input.scopes);
    await this.minting.requireNoStrongerThanMinter(actor, input.actorUrn, scopes);
    await this.minting.requireScopesHeld(actor, input.actorUrn, scopes);
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
      // The token the caller authenticated with: the new one holds, at every use, no more than it does then. Not a
      // session: creating a token while signed in is the user's own act (DataHub's web app), bounded by the user.
      parentTokenId: actor.via === "token" && !actor.session ? (actor.tokenId ?? null) : null,
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
          ...(actor.session && { sessionTokenId: actor.tokenId }),
          via: actor.via,
        },
      },
    });
    return { accessToken, metadata };
  }

  async list(actor: Actor, { input: { start, count, filters } }: z.output<typeof listTokensArgs>) {
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

  async revoke(actor: Actor, { tokenId }: z.output<typeof revokeTokenArgs>): Promise<boolean> {
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
    requireMayEndPlatformAccess(actor, stored.metadata.actorUrn, this.config.ROOT_USER_URN, "revoke a token of");
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
  async revokeAll(actor: Actor, { actorUrn }: z.output<typeof revokeTokensArgs>): Promise<number> {
    if (actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "revoke the access tokens of other users");
    }
    requireMayEndPlatformAccess(actor, actorUrn, this.config.ROOT_USER_URN, "revoke the access tokens of");
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

  async metadataFor(actor: Actor, { token }: z.output<typeof tokenMetadataArgs>): Promise<TokenMetadata> {
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
