import { MAX_TOKEN_CHAIN_DEPTH } from "@mdp/core";
import type { Prisma } from "../generated/prisma/client";
import { insertEntityChangeEvents, tokenRevokeEvents, type TokenRevokeReason } from "../events/entity-change-events";
import { withinPolicy, type DurationPolicy } from "./access-token-duration-policy";

/** Revocations of access tokens (access_token), each with its REVOKE events, and the tokens a revocation stops. */

/**
 * Marks one token revoked by `revokedBy`, with its ACCESS_TOKEN REVOKE event, in the caller's transaction (its audit
 * row goes with it); one already revoked is left as it was. Answers whether this call revoked it.
 */
export async function revokeAccessToken(
  tx: Prisma.TransactionClient,
  id: string,
  revokedBy: string,
  reason: TokenRevokeReason = "revoked",
): Promise<boolean> {
  // Only a token not revoked yet: two revocations at once write one event (the second waits for the first's row lock).
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE id = ${id}::uuid AND revoked_at IS NULL
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, reason));
  return revoked.length > 0;
}

/** A token a revocation stops: itself revoked, or created (down its chain) with one that is. */
export interface StoppedToken {
  id: string;
  /** whom it acts for: the owner of the work set through it */
  actorUrn: string;
  /** the revoked token it is, or descends from (the nearest one when several are) */
  revokedId: string;
}

/**
 * The tokens `revokedIds` and every token created with one of them, down each chain (parent_token_id, at most
 * MAX_TOKEN_CHAIN_DEPTH links), each once: what a revocation of those tokens leaves refused, and so the tokens whose
 * work it stops (docs/authorization.md "Deferred work"). Read in the revocation's transaction.
 */
export async function tokensStoppedWith(
  tx: Prisma.TransactionClient,
  revokedIds: readonly string[],
): Promise<StoppedToken[]> {
  if (revokedIds.length === 0) return [];
  return tx.$queryRaw<StoppedToken[]>`
      WITH RECURSIVE chain AS (
        SELECT id, actor_urn, id AS revoked_id, 1 AS depth FROM access_token WHERE id = ANY(${[...revokedIds]}::uuid[])
        UNION ALL
        SELECT t.id, t.actor_urn, c.revoked_id, c.depth + 1
          FROM access_token t JOIN chain c ON t.parent_token_id = c.id
         WHERE c.depth < ${MAX_TOKEN_CHAIN_DEPTH}
      )
      SELECT DISTINCT ON (id) id::text AS id, actor_urn AS "actorUrn", revoked_id::text AS "revokedId"
        FROM chain ORDER BY id, depth`;
}

/**
 * Marks every live token (neither revoked nor expired) acting for `actorUrn` revoked by `revokedBy`, in the caller's
 * transaction; answers their ids.
 */
export async function revokeLiveAccessTokensOf(
  tx: Prisma.TransactionClient,
  actorUrn: string,
  revokedBy: string,
  reason: TokenRevokeReason = "revoked",
): Promise<string[]> {
  const revoked = await tx.$queryRaw<Array<{ id: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE actor_urn = ${actorUrn} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      RETURNING id::text`;
  await insertEntityChangeEvents(
    tx,
    tokenRevokeEvents(
      revoked.map((row) => ({ id: row.id, actorUrn })),
      revokedBy,
      reason,
    ),
  );
  return revoked.map((row) => row.id);
}

/**
 * Revokes the live service-account tokens `ownerUrn` minted (revokeActorAccess: that user was handed their secrets);
 * answers their ids. Tokens it minted for people are theirs, not the minter's, and stay.
 */
export async function revokeLiveServiceAccountTokensMintedBy(
  tx: Prisma.TransactionClient,
  ownerUrn: string,
  revokedBy: string,
): Promise<string[]> {
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE owner_urn = ${ownerUrn} AND type = 'SERVICE_ACCOUNT' AND actor_urn <> ${ownerUrn}
         AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, "minterAccessRevoked"));
  return revoked.map((row) => row.id);
}

/**
 * Marks every live token whose lifetime the policy does not allow revoked by `revokedBy`, with their REVOKE events, in
 * the caller's transaction; answers their ids and actors.
 */
export async function revokeLiveAccessTokensOutside(
  tx: Prisma.TransactionClient,
  policy: DurationPolicy,
  revokedBy: string,
): Promise<Array<{ id: string; actorUrn: string }>> {
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AND type <> 'SESSION'
         AND NOT ${withinPolicy(policy)}
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, "durationPolicy"));
  return revoked;
}
