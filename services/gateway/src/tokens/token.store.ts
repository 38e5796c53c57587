import { notFound } from "@mdp/core";
import {
  type AccessToken,
  accessTokenEventUrn,
  type AccessTokenFilter,
  type Database,
  type DurationPolicy,
  findAccessToken,
  findAccessTokenCredential,
  inPrismaTransaction,
  insertAccessTokenWithAudit,
  insertAuditEventPerTarget,
  inTransaction,
  isServiceAccountUrn,
  lockLiveServiceAccount,
  type Prisma,
  type PrismaClient,
  replicaReads,
  type StaleReads,
  revokeAccessToken,
  revokeLiveAccessTokensOf,
  revokeLiveAccessTokensOutside,
  revokeLiveServiceAccountTokensMintedBy,
  type TokenRevokeReason,
} from "@mdp/db";
import type pg from "pg";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { canonicalPrivilege, type Privilege } from "../policies/privileges";
import { stopWorkSetThrough } from "./revoked-token-work";

/**
 * A token's type: a user's PERSONAL token, a SERVICE_ACCOUNT's, or a signed-in user's SESSION (DataHub's frontend,
 * session-tokens.ts), which is never listed among the personal access tokens.
 */
export type TokenType = "PERSONAL" | "SERVICE_ACCOUNT" | "SESSION";

/** A token as clients see it (GraphQL's AccessTokenMetadata); times are epoch ms. */
export interface TokenMetadata {
  urn: string;
  id: string;
  name: string;
  description: string | null;
  actorUrn: string;
  ownerUrn: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
  /** the privileges a scoped token is limited to; null: unscoped (all of its actor's) */
  scopes: Privilege[] | null;
  /** the access token its owner authenticated with when minting it (it never holds more); null: minted otherwise */
  parentTokenId: string | null;
  /** rotation (token-rotation.ts): the token this one replaced, the one that replaced it, and when (epoch ms) */
  rotatedFromId?: string | null;
  rotatedToId?: string | null;
  rotatedAt?: number | null;
}

/** A token's row as the service reads it to authorize and answer: its metadata, its salted hash, its revocation. */
export interface StoredToken {
  metadata: TokenMetadata;
  /** the stored salted hash, hex */
  tokenHash: string;
  revoked: boolean;
  /** the row's token type (a rotation's successor keeps it) */
  type: TokenType;
}

/**
 * What the verifier needs of a row to accept or refuse a bearer token, and to build its chain (its minter, the token it
 * was minted with): the same row serves when the token is the credential and when it is another token's parent.
 */
export interface TokenCredential {
  /** PERSONAL, SERVICE_ACCOUNT (a service account's; bounded by its minter as any token: boundingMinter), SESSION */
  type: TokenType;
  /** the stored hash, as bytes */
  tokenHash: Buffer;
  actorUrn: string;
  /** who minted it */
  ownerUrn: string;
  revoked: boolean;
  /** epoch ms; null: never expires */
  expiresAt: number | null;
  /** a scoped token's privileges; undefined: unscoped */
  scopes: readonly Privilege[] | undefined;
  /** the token it was minted with, or null */
  parentTokenId: string | null;
  /** when it was rotated out (epoch ms; its expiresAt then ends its grace window), or null */
  rotatedAt: number | null;
  /** its rotation family (token-rotation.ts), or null: never rotated */
  familyId: string | null;
}

/** A token to insert: its metadata, its salted hash, and what its audit row records. */
export interface NewToken {
  type: TokenType;
  metadata: TokenMetadata;
  tokenHash: string;
  /** epoch seconds; undefined: never expires */
  exp: number | undefined;
  audit: { actorUrn: string; details: Record<string, unknown> };
}

/**
 * Tokens as the service sees them: the access_token repository's rows (libs/db tokens/access-token*.repository.ts)
 * mapped to TokenMetadata, and each change with its audit row.
 */
export class TokenStore {
  private readonly prisma: PrismaClient;
  private readonly pool: pg.Pool;
  /** where the listing reads (Database.stale) */
  private readonly stale: StaleReads;

  constructor(
    db: Pick<Database, "prisma" | "pool" | "stale">,
    /** the namespace of the urns the work stopped by a revocation is audited under */
    private readonly urnNamespace: string,
  ) {
    this.prisma = db.prisma;
    this.pool = db.pool;
    this.stale = db.stale;
  }

  /**
   * DataHub's urn of a token, whatever URN_NAMESPACE is: the one its platform events, webhooks and audit rows name, so
   * one token has one urn everywhere a client meets it.
   */
  urnOf(id: string): string {
    return accessTokenEventUrn(id);
  }

  /**
   * The token and its audit row, committed together in one round trip. A service account's token is inserted under
   * the lock of its live account (lockLiveServiceAccount), so a deletion either comes first (the mint is refused,
   * NOT_FOUND) or revokes it with the account's other tokens.
   */
  async insert(token: NewToken): Promise<void> {
    if (token.type === "SERVICE_ACCOUNT") {
      await inTransaction(this.pool, async (client) => {
        const { actorUrn } = token.metadata;
        if (!(await lockLiveServiceAccount(client, actorUrn))) {
          throw notFound(`Service account ${actorUrn} does not exist (or has been deleted)`);
        }
        await this.insertWith(client, token);
      });
      return;
    }
    await this.insertWith(this.pool, token);
  }

  private async insertWith(client: Pick<pg.Pool, "query">, token: NewToken): Promise<void> {
    const { metadata } = token;
    await insertAccessTokenWithAudit(client, {
      id: metadata.id,
      type: token.type,
      name: metadata.name,
      description: metadata.description,
      actorUrn: metadata.actorUrn,
      ownerUrn: metadata.ownerUrn,
      tokenHash: token.tokenHash,
      createdAt: metadata.createdAt,
      expiresAtSeconds: token.exp ?? null,
      scopes: metadata.scopes ?? [],
      parentTokenId: metadata.parentTokenId,
      audit: { actorUrn: token.audit.actorUrn, targetUrn: metadata.urn, details: token.audit.details },
    });
  }

  /**
   * A page of live tokens (neither revoked nor expired at `now`; with a filter on expiresAt, what it selects),
   * newest first, and how many there are in all: one statement, so the two agree.
   */
  async page(
    filters: readonly AccessTokenFilter[],
    now: Date,
    start: number,
    count: number,
  ): Promise<{ total: number; tokens: TokenMetadata[] }> {
    const page = await replicaReads.accessTokenPage(this.stale, filters, now, start, count);
    // The tokens come shaped as TokenMetadata (accessTokenPage): only stored scopes are still names to canonicalise.
    for (const token of page.tokens) if (token.scopes !== null) token.scopes = scopesOf(token.scopes);
    return page as { total: number; tokens: TokenMetadata[] };
  }

  /** The token of that id (in any letter case, as PostgreSQL matches a uuid), or null; not a uuid: null. */
  async find(id: string): Promise<StoredToken | null> {
    const row = await findAccessToken(this.prisma, id);
    return (
      row && {
        metadata: this.metadataOf(row),
        tokenHash: row.tokenHash,
        revoked: row.revokedAt !== null,
        type: row.type,
      }
    );
  }

  /** Whether the urn is, or was, a service account's (service-account.repository.ts). */
  isServiceAccount(urn: string): Promise<boolean> {
    return isServiceAccountUrn(this.prisma, urn);
  }

  /** What bearer authentication reads of a token's row, or null. */
  async credentialOf(id: string): Promise<TokenCredential | null> {
    const row = await findAccessTokenCredential(this.prisma, id);
    if (!row) return null;
    return {
      type: row.type,
      tokenHash: Buffer.from(row.tokenHash, "hex"),
      actorUrn: row.actorUrn,
      ownerUrn: row.ownerUrn,
      revoked: row.revokedAt !== null,
      expiresAt: row.expiresAt?.getTime() ?? null,
      scopes: scopesOf(row.scopes) ?? undefined,
      parentTokenId: row.parentTokenId,
      rotatedAt: row.rotatedAt?.getTime() ?? null,
      familyId: row.familyId,
    };
  }

  /**
   * Marks the token revoked by `actor`, with its audit row, in one transaction, which also stops the work set through
   * it or through a token created with it (stopWorkSetThrough).
   */
  async revoke(token: TokenMetadata, actor: Actor): Promise<void> {
    await inPrismaTransaction(this.prisma, async (tx) => {
      const revoked = await revokeAccessToken(tx, token.id, actor.urn);
      await recordAudit(tx, actor, "accessToken.revoke", this.urnOf(token.id), { actorUrn: token.actorUrn });
      if (revoked) {
        await this.stopWorkIn(tx, [token.id], actor, "revokeAccessToken");
      }
    });
  }

  /**
   * The work set through tokens this transaction revoked (or through tokens created with them) stops: suspended or
   * turned off, each audited as done by `actor` (`trigger`: the operation that revoked them).
   */
  stopWorkIn(tx: Prisma.TransactionClient, revokedIds: readonly string[], actor: Actor, trigger: string) {
    return stopWorkSetThrough(tx, revokedIds, this.urnNamespace, {
      by: actor.urn,
      cause: `${trigger} by ${actor.urn}`,
      trigger,
      via: actor.via,
    });
  }

  /**
   * Revokes every live token (neither revoked nor expired) acting for `actorUrn`, by `actor`, in one transaction with
   * an audit row per token (`accessToken.revoke`, as one revocation writes, marked `bulk`) and one for the whole
   * (`accessToken.revokeAll`, on the user, with the count), and stops the work set through them (stopWorkIn). Returns
   * the ids revoked. A token created after this commits is not affected.
   */
  async revokeAllOf(actorUrn: string, actor: Actor): Promise<string[]> {
    return inPrismaTransaction(this.prisma, async (tx) => {
      const ids = await this.revokeAllOfIn(tx, actorUrn, actor);
      await this.stopWorkIn(tx, ids, actor, "revokeAccessTokens");
      return ids;
    });
  }

  /**
   * revokeAllOf's revocation in the caller's transaction, without stopping their work (revokeActorAccess stops it
   * with the user's own); `reason` is what the tokens' REVOKE events say (docs/events.md).
   */
  async revokeAllOfIn(
    tx: Prisma.TransactionClient,
    actorUrn: string,
    actor: Actor,
    reason: TokenRevokeReason = "revoked",
  ): Promise<string[]> {
    const ids = await revokeLiveAccessTokensOf(tx, actorUrn, actor.urn, reason);
    await insertAuditEventPerTarget(tx, {
      actorUrn: actor.urn,
      action: "accessToken.revoke",
      targetUrns: ids.map((id) => this.urnOf(id)),
      details: { actorUrn, bulk: true, via: actor.via },
    });
    await recordAudit(tx, actor, "accessToken.revokeAll", actorUrn, { count: ids.length });
    return ids;
  }
  /** The live service-account tokens `ownerUrn` minted, revoked in the caller's transaction (revokeActorAccess). */
  async revokeServiceAccountTokensMintedByIn(
    tx: Prisma.TransactionClient,
    ownerUrn: string,
    actor: Actor,
  ): Promise<string[]> {
    const ids = await revokeLiveServiceAccountTokensMintedBy(tx, ownerUrn, actor.urn);
    await insertAuditEventPerTarget(tx, {
      actorUrn: actor.urn,
      action: "accessToken.revoke",
      targetUrns: ids.map((id) => this.urnOf(id)),
      details: { ownerUrn, bulk: true, via: actor.via },
    });
    return ids;
  }

  /**
   * Revokes every live token whose lifetime `policy` does not allow, by `actor`, in one transaction with an audit row
   * per token (`accessToken.revoke`, as one revocation writes, marked `bulk` with the reason `durationPolicy`), and
   * stops the work set through them, as revokeAllOf does. Returns the ids revoked and their actors.
   */
  async revokeOutside(policy: DurationPolicy, actor: Actor): Promise<Array<{ id: string; actorUrn: string }>> {
    return inPrismaTransaction(this.prisma, async (tx) => {
      const revoked = await revokeLiveAccessTokensOutside(tx, policy, actor.urn);
      // One insert per actor, so each row records whom its token acted for.
      const byActor = new Map<string, Array<{ id: string }>>();
      for (const token of revoked) {
        const tokens = byActor.get(token.actorUrn);
        if (tokens) tokens.push(token);
        else byActor.set(token.actorUrn, [token]);
      }
      for (const [actorUrn, tokens] of byActor) {
        await insertAuditEventPerTarget(tx, {
          actorUrn: actor.urn,
          action: "accessToken.revoke",
          targetUrns: tokens.map((t) => this.urnOf(t.id)),
          details: { actorUrn, bulk: true, reason: "durationPolicy", via: actor.via },
        });
      }
      await this.stopWorkIn(
        tx,
        revoked.map((t) => t.id),
        actor,
        "revokeAccessTokensOutsidePolicy",
      );
      return revoked;
    });
  }

  private metadataOf(row: AccessToken): TokenMetadata {
    return {
      urn: this.urnOf(row.id),
      id: row.id,
      name: row.name,
      description: row.description,
      actorUrn: row.actorUrn,
      ownerUrn: row.ownerUrn,
      createdAt: row.createdAt.getTime(),
      expiresAt: row.expiresAt?.getTime() ?? null,
      lastUsedAt: row.lastUsedAt?.getTime() ?? null,
      scopes: scopesOf(row.scopes),
      parentTokenId: row.parentTokenId,
      rotatedFromId: row.rotatedFromId,
      rotatedToId: row.rotatedToId,
      rotatedAt: row.rotatedAt?.getTime() ?? null,
    };
  }
}

/**
 * A row's scopes, or null for an unscoped token (an empty or NULL column). Names were checked when the token was
 * made; one no longer known (a privilege since removed from the service) grants nothing.
 */
function scopesOf(stored: readonly string[] | null): Privilege[] | null {
  if (!stored || stored.length === 0) return null;
  return stored.flatMap((name) => canonicalPrivilege(name) ?? []);
}
