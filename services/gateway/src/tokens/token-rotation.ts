import { randomUUID } from "node:crypto";
import { z } from "zod";
import { badInput, forbidden, missingFrom, notFound, SYSTEM_ACTOR_URN, type Config, type Logger } from "@mdp/core";
import { inPrismaTransaction, revokeAccessTokenFamily, rotateAccessToken, type PrismaClient } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { idField, parseArgs, said } from "../http/validate";
import type { RateLimits } from "../http/rate-limits";
import type { PolicyEngine } from "../policies/policy-engine";
import { withImplied, withinScopes } from "../policies/privileges";
import { Hs256, type AccessTokenClaims } from "./jwt";
import { hashToken } from "./token-hash";
import { TOKEN_ISSUER, TOKEN_VERSION } from "./token.service";
import type { StoredToken, TokenMetadata, TokenStore } from "./token.store";
import type { TokenVerifier } from "./token.verifier";

/** The longest grace window a rotation may give the token it replaces: a day (docs/limits.md). */
export const MAX_GRACE_SECONDS = 86_400;

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

/**
 * rotateAccessToken (docs/api.md "Rotating a token") and reuse detection. A rotation mints a successor with its
 * predecessor's name, description, type, actor, minter (ownerUrn), scopes, parent token and lifetime, in the same
 * family; the predecessor keeps working for the grace window (its expiry becomes the window's end), then is refused.
 * One used after its window revokes its whole family, audited as suspected theft (OAuth refresh-token reuse
 * detection): whoever holds the successor, the rotated-out token was in someone else's hands too.
 *
 * Who may rotate: the token itself (its bearer renews without a human, needing no privilege: the successor has
 * exactly the authority the token had, bounded at every use as it was), or whoever could mint it anew:
 * GENERATE_PERSONAL_ACCESS_TOKENS for one's own, MANAGE_ACCESS_TOKENS for another user's, and never a token stronger
 * than the request that rotates it (createAccessToken's rules).
 */
export class TokenRotation {
  private readonly jwt: Hs256;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly store: Pick<TokenStore, "find" | "urnOf">,
    private readonly verifier: Pick<TokenVerifier, "forget">,
    private readonly policies: PolicyEngine,
    private readonly config: Pick<
      Config,
      | "TOKEN_SIGNING_KEY"
      | "TOKEN_SALT"
      | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
      | "ACCESS_TOKEN_ALLOWED_DURATIONS"
      | "ROOT_USER_URN"
    >,
    private readonly logger: Logger,
    private readonly rateLimits?: Pick<RateLimits, "consume">,
  ) {
    this.jwt = new Hs256(config.TOKEN_SIGNING_KEY);
  }

  async rotate(actor: Actor, args: unknown): Promise<{ accessToken: string; metadata: TokenMetadata }> {
    const given = (args as { tokenId?: unknown } | null)?.tokenId;
    // The token in use, rotating itself: settled on the signed claims' id, before anything is looked up.
    const self =
      actor.via === "token" && typeof given === "string" && given.toLowerCase() === actor.tokenId?.toLowerCase();
    if (!self) await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", "rotate access tokens");
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
    const lifetime = this.requireLifetimeAllowed(old);
    const issuedAt = Math.floor(now / 1000);
    const exp = lifetime === null ? undefined : issuedAt + lifetime;
    await this.requireWithinParent(old, exp);
    await this.rateLimits?.consume(actor, "tokenMints");

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
          ownerUrn: old.ownerUrn,
          tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
          createdAt: now,
          expiresAtSeconds: exp ?? null,
          scopes: old.scopes ?? [],
          parentTokenId: old.parentTokenId,
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
   * from the same first one, successors included, audited as suspected theft; then every replica is told. Another
   * replica that got there first leaves nothing to revoke here, and nothing is audited twice.
   */
  async reuseDetected(tokenId: string, familyId: string, actorUrn: string): Promise<void> {
    const revoked = await inPrismaTransaction(this.prisma, (tx) =>
      revokeAccessTokenFamily(tx, {
        familyId,
        reusedTokenId: tokenId,
        revokedBy: SYSTEM_ACTOR_URN,
        urnOf: (id) => this.store.urnOf(id),
        details: { actorUrn, suspectedTheft: true, via: "reuse-detection" },
      }),
    );
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
    if (!token || token.actorUrn !== actor.urn) {
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
  private requireLifetimeAllowed(token: TokenMetadata): number | null {
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
    throw badInput(
      `tokenId ${token.id} has a lifetime of ${seconds} seconds, not an allowed token lifetime on this server any ` +
        `more: ACCESS_TOKEN_ALLOWED_DURATIONS=${allowed.map((d) => d.iso).join(",")}; create a new token instead`,
    );
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
