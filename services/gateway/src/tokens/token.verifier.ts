import { hash } from "node:crypto";
import { LRUCache } from "lru-cache";
import {
  boundingMinter,
  MAX_TOKEN_CHAIN_DEPTH,
  SYSTEM_ACTOR_URN,
  unauthenticated,
  type Config,
  type Principal,
} from "@mdp/core";
import type { Actor } from "../auth/actor";
import type { InvalidationBus } from "../events/invalidation-bus";
import { Hs256, JwtError, type AccessTokenClaims } from "./jwt";
import { countAccepted, countRefused, type RefusalReason } from "./token-metrics";
import { digestMatches, tokenDigest } from "./token-hash";
import type { TokenCredential, TokenStore } from "./token.store";

/** Where each accepted use of a token goes: token-usage's recorder, which keeps its lastUsedAt. */
export interface TokenUses {
  used(tokenId: string): void;
}

/**
 * A safety net only: revocations reach every replica over pub/sub at once, and the cache is not read at all while the
 * bus cannot vouch for the channel (InvalidationBus.isLive).
 */
const TOKEN_CACHE_MAX_AGE_MS = 30_000;
const TOKEN_CACHE_MAX_ENTRIES = 50_000;

/**
 * Bearer authentication with access tokens, and the two caches that keep it off PostgreSQL: the rows of tokens
 * (`known`: hash, actor, minter, revocation, expiry, scopes, parent token; invalidated across replicas over the
 * InvalidationBus, bypassed while it is not live) and the claims of tokens that passed the full check (`verified`).
 *
 * A token's chain (the token it was minted with, and that one's, up to MAX_TOKEN_CHAIN_DEPTH) is built anew from
 * `known` on every use, never cached as a whole: a parent's row is cached like any token's and dropped by the same
 * revocation events, so a revoked parent refuses its children on every replica as soon as its own row is dropped. A
 * revoked, expired or missing ancestor refuses the token (401, counted as revoked): what it was minted under no
 * longer stands, and its privileges could not be bounded by it.
 */
export class TokenVerifier {
  private readonly jwt: Hs256;
  /** What a replica remembers about a token it has verified: enough to refuse it without PostgreSQL once revoked. */
  private readonly known = new LRUCache<string, TokenCredential>({
    max: TOKEN_CACHE_MAX_ENTRIES,
    ttl: TOKEN_CACHE_MAX_AGE_MS,
  });
  /**
   * The claims of tokens that passed the full check, by the SHA-256 of the token (a one-way digest of 256 random bits
   * of signature, no more use to a reader of this memory than the salted hashes in the table). Claims never change;
   * whether the token still counts is its row's, looked up on every use.
   */
  private readonly verified = new LRUCache<string, AccessTokenClaims>({ max: TOKEN_CACHE_MAX_ENTRIES });
  /** bumped by every invalidation, so a lookup that raced with a revocation does not cache what it read */
  private generation = 0;
  /** what a rotated-out token used after its grace window sets off (token-rotation.ts: its family's revocation) */
  private reuse?: (tokenId: string, familyId: string, actorUrn: string) => Promise<void>;

  constructor(
    private readonly store: Pick<TokenStore, "credentialOf">,
    private readonly bus: InvalidationBus,
    private readonly uses: TokenUses,
    private readonly config: Pick<Config, "TOKEN_SIGNING_KEY" | "TOKEN_SALT">,
  ) {
    this.jwt = new Hs256(config.TOKEN_SIGNING_KEY);
    bus.onInvalidation((event) => {
      if (event.kind === "token-revoked") {
        this.generation++;
        this.known.delete(event.tokenId);
      } else if (event.kind === "actor-tokens-revoked") {
        this.forgetTokensOf(event.actorUrn);
      }
    });
    bus.onReset(() => {
      this.generation++;
      this.known.clear();
    });
  }

  /**
   * Authenticates a bearer token: signature, expiry, then its row (cached, invalidated across replicas): the salted
   * hash, the actor, revocation. A token that passed all of that before is recognised by its SHA-256: being byte for
   * byte the same token, it needs neither the signature nor the salted hash checked again (two HMACs and the
   * decoding cost several times the one-shot hash per request), only the expiry and its row's revocation, which are
   * checked on every use. Tokens accepted and refused, and the reasons given, are the same either way. Then the
   * chain of a token minted with a token (the class comment), on every use too.
   */
  async verify(token: string): Promise<Actor> {
    const fingerprint = hash("sha256", token, "base64url");
    let claims = this.verified.get(fingerprint);
    let known: TokenCredential | null | undefined = claims && this.cached(claims.jti);
    if (claims && known) {
      requireUnexpired(claims);
    } else {
      claims = this.claimsOf(token);
      requireUnexpired(claims);
      known = this.cached(claims.jti) ?? (await this.load(claims.jti));
      if (
        !known ||
        !digestMatches(tokenDigest(token, this.config.TOKEN_SALT), known.tokenHash) ||
        known.actorUrn !== claims.sub ||
        // The system actor is the system client's own identity; no token may act as it (none is minted any more).
        claims.sub === SYSTEM_ACTOR_URN
      ) {
        throw refused("invalid", "Unable to verify the provided token.");
      }
      this.verified.set(fingerprint, claims);
    }
    if (known.revoked) throw refused("revoked", "Token has been revoked");
    // Rotated out, and its grace window (its row's expiry) over, while its own exp claim has not come: reuse.
    if (known.rotatedAt !== null && known.expiresAt !== null && known.expiresAt <= Date.now()) {
      await this.reuse?.(claims.jti, known.familyId ?? claims.jti, known.actorUrn);
      throw refused(
        "revoked",
        "Token has been revoked: it was rotated and used after its grace window ended, so every token of its " +
          "rotation family has been revoked (suspected theft).",
      );
    }
    const actor: Actor = { urn: claims.sub, via: "token", tokenId: claims.jti };
    if (known.type === "SESSION") actor.session = true;
    withLinks(actor, known);
    // Most tokens have no parent: no await, so their requests pay nothing for chains.
    if (known.parentTokenId !== null) actor.parent = await this.ancestor(known.parentTokenId, 2);
    if (claims.exp !== undefined) actor.tokenExpiresAt = claims.exp * 1000;
    this.uses.used(claims.jti);
    countAccepted();
    return actor;
  }

  /**
   * The Principal of the token `depth` links up a chain (the token in use is 1), its row read from `known` (or loaded
   * once, then cached like any token's row), with its own parent's, and so on.
   */
  private async ancestor(tokenId: string, depth: number): Promise<Principal> {
    // Minting refuses a chain longer than this; one that is longer anyway was not made by this service.
    if (depth > MAX_TOKEN_CHAIN_DEPTH) throw refused("invalid", "Unable to verify the provided token.");
    const row = this.cached(tokenId) ?? (await this.load(tokenId));
    if (!row || row.revoked) {
      throw refused("revoked", `Token has been revoked: the access token it was created with (${tokenId}) is revoked.`);
    }
    if (row.expiresAt !== null && row.expiresAt <= Date.now()) {
      throw refused(
        "revoked",
        `Token has been revoked: the access token it was created with (${tokenId}) has expired.`,
      );
    }
    const principal: Principal = { urn: row.actorUrn, tokenId };
    withLinks(principal, row);
    if (row.parentTokenId !== null) principal.parent = await this.ancestor(row.parentTokenId, depth + 1);
    return principal;
  }

  /**
   * Called after this replica revoked a token (committed): forgets it here at once, then tells the other replicas.
   * The commit is what revokes; publishing only shortens their caches, bounded, never failing the call.
   */
  async revoked(tokenId: string): Promise<void> {
    this.known.delete(tokenId);
    await this.bus.publish({ kind: "token-revoked", tokenId });
  }

  /** What a rotated-out token used after its grace window sets off: composition wires TokenRotation.reuseDetected. */
  onReuse(handler: (tokenId: string, familyId: string, actorUrn: string) => Promise<void>): void {
    this.reuse = handler;
  }

  /**
   * Called after a token's row changed otherwise than by revocation (a rotation shortened its expiry): every replica
   * reads it anew, as for a revocation.
   */
  async forget(tokenId: string): Promise<void> {
    await this.revoked(tokenId);
  }

  /** Called after this replica revoked every token of a user (committed): as `revoked`, for all of them at once. */
  async revokedAllOf(actorUrn: string): Promise<void> {
    this.forgetTokensOf(actorUrn);
    await this.bus.publish({ kind: "actor-tokens-revoked", actorUrn });
  }

  /** A scan of at most TOKEN_CACHE_MAX_ENTRIES, once per bulk revocation: cheap next to keeping a per-user index. */
  private forgetTokensOf(actorUrn: string): void {
    this.generation++;
    const theirs = [...this.known.entries()].filter(([, known]) => known.actorUrn === actorUrn);
    for (const [tokenId] of theirs) this.known.delete(tokenId);
  }

  private claimsOf(token: string): AccessTokenClaims {
    try {
      return this.jwt.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw refused("invalid", "Unable to verify the provided token.");
      throw error;
    }
  }

  private cached(tokenId: string): TokenCredential | undefined {
    // A revocation announced on a channel that is not delivering would go unseen: read the row instead.
    return this.bus.isLive() ? this.known.get(tokenId) : undefined;
  }

  private async load(tokenId: string): Promise<TokenCredential | null> {
    const generation = this.generation;
    const row = await this.store.credentialOf(tokenId);
    if (row && generation === this.generation) this.known.set(tokenId, row);
    return row;
  }
}

/** A token's own links, from its row: its scopes, and its minter when another user minted it (not a service account's). */
function withLinks(principal: Principal, row: TokenCredential): void {
  if (row.scopes) principal.scopes = row.scopes;
  const minterUrn = boundingMinter(row);
  if (minterUrn !== undefined) principal.minterUrn = minterUrn;
}

function requireUnexpired(claims: AccessTokenClaims): void {
  if (claims.exp !== undefined && claims.exp * 1000 <= Date.now()) throw refused("expired", "Token has expired.");
}

/** A refusal, counted by its reason (mdp_token_verifications_total). */
function refused(reason: RefusalReason, message: string) {
  countRefused(reason);
  return unauthenticated(message);
}
