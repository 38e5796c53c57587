import { randomUUID } from "node:crypto";
import { z } from "zod";
import { badInput, forbidden, missingFrom, notFound, SYSTEM_ACTOR_URN, type Config, type Logger } from "@mdp/core";
import {
  accessTokenFamilyStart,
  inPrismaTransaction,
  revokeAccessTokenFamily,
  rotateAccessToken,
  type PrismaClient,
} from "@mdp/db";
import type { Actor } from "../auth/actor";
import { idField, parseArgs, said } from "../shared/validate";
import type { RateLimits } from "../shared/rate-limits";
import type { PolicyEngine } from "../policies/policy-engine";
import { withImplied, withinScopes } from "../policies/privileges";
import { Hs256, type AccessTokenClaims } from "./jwt";
import { hashToken } from "./token-hash";
import { requireChainRoom, requireWithinTokenInUse } from "./token-minting-policy";
import { TOKEN_ISSUER, TOKEN_VERSION } from "./token.service";
import type { StoredToken, TokenMetadata, TokenStore } from "./token.store";
import type { TokenVerifier } from "./token.verifier";
import { stopWorkSetThrough } from "./revoked-token-work";

/** The longest grace window a rotation may give the token it replaces: a day (docs/limits.md). */
export const MAX_GRACE_SECONDS = 86_400;

const DAY_MS = 86_400_000;

/** A rotation family's bounds (TokenRotation.familyOf). */
interface Family {
  /** epoch ms: its first token's creation */
  start: number;
  /** epoch seconds: no token of it expires later */
  end: number;
}

const rotateArgs = z.object({
  tokenId: idField(),
  graceSeconds: z
    .number(said((at) => `${at} must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS}`))
    .int(said((at) => `${at} must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS}`))
    .min(
      0,
      said((at) => `${at} must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS}`),
    )
    .max(
      MAX_GRACE_SECONDS,
      said(
        (at, given) =>
          `${at} ${String(given)} is more than ${MAX_GRACE_SECONDS} seconds (one day), the most a grace window may be`,
      ),
    )
    .nullish()
    .transform((grace) => grace ?? 0),
});

export interface TokenRotationDeps {
  prisma: PrismaClient;
  store: Pick<TokenStore, "find" | "urnOf">;
  verifier: Pick<TokenVerifier, "forget">;
  policies: PolicyEngine;
  config: Pick<
    Config,
    | "TOKEN_SIGNING_KEY"
    | "TOKEN_SALT"
    | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
    | "ACCESS_TOKEN_ALLOWED_DURATIONS"
    | "ROOT_USER_URN"
    | "ACCESS_TOKEN_FAMILY_MAX_DAYS"
    | "URN_NAMESPACE"
  >;
  logger: Logger;
  rateLimits?: Pick<RateLimits, "consume">;
}

/**
 * rotateAccessToken (docs/api.md "Rotating a token") and reuse detection. A rotation mints a successor with its
 * predecessor's name, description, type, actor, scopes and lifetime, in the same family; the predecessor keeps
 * working for the grace window (its expiry becomes the window's end), then is refused. One used after its window
 * revokes its whole family, audited as suspected theft (OAuth refresh-token reuse detection): whoever holds the
 * successor, the rotated-out token was in someone else's hands too.
 *
 * Who may rotate, and who bounds the successor: the token itself (its bearer renews without a human, needing no
 * privilege), whose successor keeps its minter and parent, so it has exactly the authority the token had, bounded at
 * every use as it was; or whoever could mint it anew (GENERATE_PERSONAL_ACCESS_TOKENS for one's own,
 * MANAGE_ACCESS_TOKENS for another user's), whose successor is the caller's as createAccessToken's would be: the
 * caller is its minter and the caller's token its parent, so it never outlives, nor ever holds more than, the request
 * that made it. Either way a family ends ACCESS_TOKEN_FAMILY_MAX_DAYS after its first token was created: whoever
 * holds a token cannot renew it for ever.
 */
export class TokenRotation {
  private readonly jwt: Hs256;

  private readonly prisma: PrismaClient;
  private readonly store: TokenRotationDeps["store"];
  private readonly verifier: TokenRotationDeps["verifier"];
  private readonly policies: PolicyEngine;
  private readonly config: TokenRotationDeps["config"];
  private readonly logger: Logger;
  private readonly rateLimits: TokenRotationDeps["rateLimits"];

  constructor(deps: TokenRotationDeps) {
    this.prisma = deps.prisma;
    this.store = deps.store;
    this.verifier = deps.verifier;
    this.policies = deps.policies;
    this.config = deps.config;
    this.logger = deps.logger;
    this.rateLimits = deps.rateLimits;
    this.jwt = new Hs256(deps.config.TOKEN_SIGNING_KEY);
  }

  async rotate(actor: Actor, args: unknown): Promise<{ accessToken: string; metadata: TokenMetadata }> {
    const given = (args as { tokenId?: unknown } | null)?.tokenId;
    // The token in use, rotating itself: settled on the signed claims' id, before anything is looked up.
    const self =
      actor.via === "token" && typeof given === "string" && given.toLowerCase() === actor.tokenId?.toLowerCase();
    // Whoever could mint no token at all is refused before anything is looked up; which privilege the token itself
    // needs (a service account's or a personal one's) is settled once it is found (requireMayRotate).
    if (!self && !(await this.policies.has(actor, "MANAGE_SERVICE_ACCOUNTS"))) {
      await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", "rotate access tokens");
    }
    const { tokenId, graceSeconds } = parseArgs(rotateArgs, args);
    const stored = await this.store.find(tokenId);
    if (!self) await this.requireMayRotate(actor, tokenId, stored);
    if (!stored) throw notFound(`Access token ${tokenId} does not exist`);
    const old = stored.metadata;
    if (stored.revoked) throw notFound(`Access token ${old.id} has been revoked`);
    if (old.rotatedToId) {
      throw badInput(
        `tokenId ${old.id} was rotated already (at ${new Date(old.rotatedAt!).toISOString()}, into ${old.rotatedToId}): ` +
          `rotate its successor instead`,
      );
    }
    const now = Date.now();
    if (old.expiresAt !== null && old.expiresAt <= now) {
      throw badInput(`tokenId ${old.id} has expired: a rotation renews a live token; create a new one instead`);
    }
    const issuedAt = Math.floor(now / 1000);
    const family = await this.familyOf(old);
    // A token already reaching its family's end renews nothing (and a successor cut to that end has a lifetime that
    // is no allowed one): refused below, once a caller rotating another token has heard what createAccessToken
    // would tell it.
    const atFamilyEnd = family !== null && family.end * 1000 <= old.expiresAt!;
    let exp: number | undefined;
    if (atFamilyEnd) {
      exp = family.end;
    } else {
      const lifetime = this.requireLifetimeAllowed(old, family);
      exp = lifetime === null ? undefined : Math.min(issuedAt + lifetime, family?.end ?? Infinity);
    }
    if (!self) {
      requireChainRoom(actor);
      requireWithinTokenInUse(
        actor,
        exp,
        `tokenId ${old.id}'s successor`,
        "rotate it with a longer-lived token (or let the token rotate itself)",
      );
    }
    if (atFamilyEnd) {
      throw badInput(
        `tokenId ${old.id} cannot be renewed: its rotation family's lifetime ends at ` +
          `${new Date(family.end * 1000).toISOString()} (ACCESS_TOKEN_FAMILY_MAX_DAYS=` +
          `${this.config.ACCESS_TOKEN_FAMILY_MAX_DAYS} days after its first token was created), and the token ` +
          `expires no earlier; create a new token instead`,
      );
    }
    // The predecessor's parent bounds only a successor that keeps it; any other's parent is the caller's token.
    if (self) await this.requireWithinParent(old, exp);
    await this.rateLimits?.consume(actor, "tokenMints");
    // A token rotating itself keeps its minter and parent (it renews, never widens); any other rotation is a mint by
    // the caller, bounded as createAccessToken bounds what the caller creates.
    const ownerUrn = self ? old.ownerUrn : actor.urn;
    const parentTokenId = self
      ? old.parentTokenId
      : actor.via === "token" && !actor.session
        ? (actor.tokenId ?? null)
        : null;

    const id = randomUUID();
    const accessToken = this.jwt.sign({
      sub: old.actorUrn,
      jti: id,
      type: stored.type as AccessTokenClaims["type"],
      iat: issuedAt,
      iss: TOKEN_ISSUER,
      ver: TOKEN_VERSION,
      ...(exp === undefined ? {} : { exp }),
    });
    const graceEndsAt = now + graceSeconds * 1000;
    const metadata: TokenMetadata = {
      ...old,
      urn: this.store.urnOf(id),
      id,
      ownerUrn,
      parentTokenId,
      createdAt: now,
      expiresAt: exp === undefined ? null : exp * 1000,
      lastUsedAt: null,
      rotatedFromId: old.id,
      rotatedToId: null,
      rotatedAt: null,
    };
    const familyId = await inPrismaTransaction(this.prisma, (tx) =>
      rotateAccessToken(tx, {
        predecessorId: old.id,
        graceEndsAt,
        successor: {
          id,
          type: stored.type,
          name: old.name,
          description: old.description,
          actorUrn: old.actorUrn,
          ownerUrn,
          tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
          createdAt: now,
          expiresAtSeconds: exp ?? null,
          scopes: old.scopes ?? [],
          parentTokenId,
        },
        audit: {
          actorUrn: actor.urn,
          predecessorUrn: old.urn,
          successorUrn: metadata.urn,
          details: {
            name: old.name,
            actorUrn: old.actorUrn,
            graceSeconds,
            graceEndsAt: Math.min(graceEndsAt, old.expiresAt ?? Infinity),
            scopes: old.scopes,
            ownerUrn,
            ...(parentTokenId !== null && { parentTokenId }),
            // The successor ends with its family.
            ...(family !== null && exp === family.end && { familyEndsAt: family.end * 1000 }),
            self,
            via: actor.via,
          },
        },
      }),
    );
    if (familyId === null) {
      // Another rotation or a revocation committed between the read and this one.
      throw badInput(`tokenId ${old.id} was rotated or revoked meanwhile: list your tokens and rotate the live one`);
    }
    // Every replica reads the predecessor's row anew: its expiry is now the end of its grace window.
    await this.verifier.forget(old.id);
    return { accessToken, metadata };
  }

  /**
   * A rotated-out token used after its grace window (the verifier found it): revokes its family, every token rotated
   * from the same first one, successors included, audited as suspected theft, and the work set through any of them
   * stopped in the same transaction (whoever holds a stolen one may have set it); then every replica is told. Another
   * replica that got there first leaves nothing to revoke here, and nothing is audited twice.
   */
  async reuseDetected(tokenId: string, familyId: string, actorUrn: string): Promise<void> {
    const revoked = await inPrismaTransaction(this.prisma, async (tx) => {
      const family = await revokeAccessTokenFamily(tx, {
        familyId,
        reusedTokenId: tokenId,
        revokedBy: SYSTEM_ACTOR_URN,
        urnOf: (id) => this.store.urnOf(id),
        details: { actorUrn, suspectedTheft: true, via: "reuse-detection" },
      });
      await stopWorkSetThrough(
        tx,
        family.map((t) => t.id),
        this.config.URN_NAMESPACE,
        {
          by: SYSTEM_ACTOR_URN,
          cause: `reuse of access token ${tokenId} after its rotation's grace window (suspected theft) revoked its family`,
          trigger: "reuseDetected",
          via: "reuse-detection",
        },
      );
      return family;
    });
    if (revoked.length > 0) {
      this.logger.warn(
        { tokenId, familyId, actorUrn, revoked: revoked.length },
        "a rotated-out access token was used after its grace window: its family is revoked (suspected theft)",
      );
    }
    for (const token of revoked) await this.verifier.forget(token.id);
  }

  /**
   * Rotating a token that is not the one in use: the caller could mint it anew. Settled before whether the token
   * exists is told (an unknown id is refused as another user's is, to a caller without MANAGE_ACCESS_TOKENS).
   */
  private async requireMayRotate(actor: Actor, tokenId: string, stored: StoredToken | null): Promise<void> {
    const token = stored?.metadata;
    // A service account's token is minted with MANAGE_SERVICE_ACCOUNTS alone, and so is rotated: its successor's value
    // is a credential of the account, which MANAGE_ACCESS_TOKENS does not give.
    if (stored?.type === "SERVICE_ACCOUNT") {
      await this.policies.require(actor, "MANAGE_SERVICE_ACCOUNTS", "rotate the access tokens of service accounts");
    } else if (!(await this.policies.has(actor, "GENERATE_PERSONAL_ACCESS_TOKENS"))) {
      await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", "rotate access tokens");
    } else if (!token || token.actorUrn !== actor.urn) {
      if (!(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
        throw forbidden(
          `${actor.urn} is unauthorized to rotate access token ${tokenId}: it does not act for you, and rotating ` +
            `other users' tokens needs MANAGE_ACCESS_TOKENS.`,
        );
      }
    }
    if (!token) return;
    if (token.actorUrn === this.config.ROOT_USER_URN && actor.urn !== token.actorUrn) {
      throw forbidden(`${actor.urn} is unauthorized to rotate the root user's access tokens: only the root user may.`);
    }
    // A scoped caller rotates only tokens within its scopes: the successor's value is handed to it.
    if (actor.scopes) {
      const allowed = withImplied(actor.scopes);
      if (token.scopes === null || token.scopes.some((p) => !allowed.has(p))) {
        throw forbidden(
          `${actor.urn} is unauthorized to rotate access token ${token.id}: the access token in use is scoped to ` +
            `${actor.scopes.join(", ")}, and the token's successor would hold more.`,
        );
      }
    }
    const [held, wanted] = await Promise.all([
      this.policies.privilegesOf(actor),
      this.policies.grantsOf(token.actorUrn).then((grants) => withinScopes(grants, token.scopes ?? undefined)),
    ]);
    if (missingFrom(held, wanted).length > 0) {
      throw forbidden(
        `${actor.urn} is unauthorized to rotate access token ${token.id}: its successor would hold privileges the ` +
          `request rotating it does not.`,
      );
    }
  }

  /**
   * The predecessor's lifetime in seconds (null: never expires), which the successor gets too, if the current policy
   * still allows it: a rotation never mints what createAccessToken would refuse.
   */
  private requireLifetimeAllowed(token: TokenMetadata, family: Family | null): number | null {
    if (token.expiresAt === null) {
      if (this.config.ACCESS_TOKEN_ALLOW_NO_EXPIRY) return null;
      throw badInput(
        `tokenId ${token.id} never expires, which this server no longer allows (ACCESS_TOKEN_ALLOW_NO_EXPIRY=false): ` +
          `create a token with an allowed lifetime instead`,
      );
    }
    const seconds = Math.round((token.expiresAt - Math.floor(token.createdAt / 1000) * 1000) / 1000);
    const allowed = this.config.ACCESS_TOKEN_ALLOWED_DURATIONS;
    if (allowed.some((d) => d.seconds === seconds)) return seconds;
    // A successor cut to its family's end under a smaller ACCESS_TOKEN_FAMILY_MAX_DAYS than today's (under today's
    // it would be at that end, refused before this) expires a whole number of days after the family began, to the
    // second; the lifetime it was cut from is not stored, and an operator would not recognise this one.
    if (family !== null && token.rotatedFromId) {
      const days = Math.ceil((token.expiresAt - family.start) / DAY_MS);
      if (days >= 1 && family.start + days * DAY_MS - token.expiresAt < 1000) {
        throw badInput(
          `tokenId ${token.id} was cut short to expire at its rotation family's end (${days} days after its first ` +
            `token was created, under an earlier ACCESS_TOKEN_FAMILY_MAX_DAYS), so the lifetime to renew it with is ` +
            `unknown; create a new token instead`,
        );
      }
    }
    throw badInput(
      `tokenId ${token.id} has a lifetime of ${seconds} seconds, not an allowed token lifetime on this server any ` +
        `more: ACCESS_TOKEN_ALLOWED_DURATIONS=${allowed.map((d) => d.iso).join(",")}; create a new token instead`,
    );
  }

  /**
   * The token's rotation family's bounds: when its first token was created (epoch ms) and when the family ends
   * (epoch seconds: ACCESS_TOKEN_FAMILY_MAX_DAYS later, to the second below). Null for a token that never expires:
   * ACCESS_TOKEN_ALLOW_NO_EXPIRY lets such a token live for ever without rotating, so a bound on its renewals would
   * bound nothing.
   */
  private async familyOf(token: TokenMetadata): Promise<Family | null> {
    if (token.expiresAt === null) return null;
    const start = (await accessTokenFamilyStart(this.prisma, token.id)) ?? token.createdAt;
    return { start, end: Math.floor((start + this.config.ACCESS_TOKEN_FAMILY_MAX_DAYS * DAY_MS) / 1000) };
  }

  /** A token minted with a token expires no later than it (createAccessToken's rule): so does its successor. */
  private async requireWithinParent(token: TokenMetadata, exp: number | undefined): Promise<void> {
    if (token.parentTokenId === null) return;
    const parent = await this.store.find(token.parentTokenId);
    const parentExp = parent?.metadata.expiresAt ?? null;
    if (!parent || parent.revoked || (parentExp !== null && parentExp <= Date.now())) {
      throw badInput(
        `tokenId ${token.id} was created with access token ${token.parentTokenId}, which is revoked or expired: ` +
          `the token stops working with it, and so would its successor`,
      );
    }
    if (parentExp === null || (exp !== undefined && exp * 1000 <= parentExp)) return;
    throw badInput(
      `tokenId ${token.id}'s successor would outlive access token ${token.parentTokenId}, which it was created with ` +
        `and which expires at ${new Date(parentExp).toISOString()}: create it anew with a longer-lived token`,
    );
  }
}
