import type { Prisma } from "../generated/prisma/client";
import { insertAuditEvent, insertAuditEventPerTarget } from "../audit";
import {
  insertEntityChangeEvents,
  tokenCreateEvent,
  tokenRevokeEvents,
  tokenRotateEvent,
} from "../events/entity-change-events";
import type { AccessTokenInsert } from "./access-token.repository";

/**
 * Rotation of access tokens (rotateAccessToken) and reuse detection: a successor that takes its predecessor's place,
 * and the revocation of a whole family when a rotated-out token is used after its grace window.
 */

/**
 * The successor a rotation inserts: its predecessor's name, type, actor and scopes; its minter and parent the
 * predecessor's (a token rotating itself) or the caller's (any other rotation); a new id, hash and expiry.
 */
export type RotationSuccessor = Omit<AccessTokenInsert, "audit">;

export interface Rotation {
  predecessorId: string;
  /** epoch ms: when the predecessor stops working (its expiry, when that is earlier, stays) */
  graceEndsAt: number;
  successor: RotationSuccessor;
  /** the audit rows' actor and details: `accessToken.rotate` on the predecessor, `accessToken.create` on the successor */
  audit: { actorUrn: string; predecessorUrn: string; successorUrn: string; details: Record<string, unknown> };
}

/**
 * Rotates a live, not yet rotated token in the caller's transaction: marks it rotated (its expiry becomes the end of
 * its grace window, so lists and the verifier see it end there), inserts the successor in its family, and writes both
 * audit rows. Answers the family's id, or null when the token is no longer live or was rotated already (two rotations
 * at once: one wins), which the caller reads again to say why.
 */
export async function rotateAccessToken(tx: Prisma.TransactionClient, rotation: Rotation): Promise<string | null> {
  const { successor: s } = rotation;
  const rotated = await tx.$queryRaw<Array<{ family_id: string }>>`
      UPDATE access_token
         SET rotated_at = now(), rotated_to_id = ${s.id}::uuid, family_id = COALESCE(family_id, id),
             expires_at = LEAST(expires_at, to_timestamp(${rotation.graceEndsAt}::int8 / 1000.0))
       WHERE id = ${rotation.predecessorId}::uuid AND revoked_at IS NULL AND rotated_at IS NULL
         AND (expires_at IS NULL OR expires_at > now())
      RETURNING family_id::text`;
  const familyId = rotated[0]?.family_id;
  if (familyId === undefined) return null;
  await tx.$executeRaw`
      INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at,
                                scopes, parent_token_id, family_id, rotated_from_id)
      VALUES (${s.id}::uuid, ${s.type}::"AccessTokenType", ${s.name}, ${s.description}, ${s.actorUrn}, ${s.ownerUrn},
              ${s.tokenHash}, to_timestamp(${s.createdAt}::int8 / 1000.0), to_timestamp(${s.expiresAtSeconds}::int8),
              ${[...s.scopes]}::text[], ${s.parentTokenId}::uuid, ${familyId}::uuid, ${rotation.predecessorId}::uuid)`;
  const { audit } = rotation;
  await insertEntityChangeEvents(tx, [
    tokenRotateEvent(
      {
        predecessorId: rotation.predecessorId,
        successorId: s.id,
        actorUrn: s.actorUrn,
        graceEndsAt: rotation.graceEndsAt,
      },
      audit.actorUrn,
    ),
    tokenCreateEvent({ ...s, rotatedFromId: rotation.predecessorId }, audit.actorUrn),
  ]);
  await insertAuditEvent(tx, {
    actorUrn: audit.actorUrn,
    action: "accessToken.rotate",
    targetUrn: audit.predecessorUrn,
    details: { ...audit.details, successorId: s.id },
  });
  await insertAuditEvent(tx, {
    actorUrn: audit.actorUrn,
    action: "accessToken.create",
    targetUrn: audit.successorUrn,
    details: { ...audit.details, rotatedFromId: rotation.predecessorId },
  });
  return familyId;
}

/**
 * When the rotation family of `tokenId` began: its first token's creation, epoch ms (a token never rotated is its
 * family's first); null when there is no such token. The first token is the row whose id is the family's, which is
 * COALESCE(family_id, id) of every member at any time (a first rotation sets family_id to the row's own id), and a
 * creation time never changes: so this read, though outside the rotation's transaction, cannot race with it.
 */
export async function accessTokenFamilyStart(
  db: Pick<Prisma.TransactionClient, "$queryRaw">,
  tokenId: string,
): Promise<number | null> {
  const rows = await db.$queryRaw<Array<{ created_at: Date }>>`
      SELECT first.created_at
        FROM access_token AS t JOIN access_token AS first ON first.id = COALESCE(t.family_id, t.id)
       WHERE t.id = ${tokenId}::uuid`;
  return rows[0]?.created_at.getTime() ?? null;
}

/** A family's revocation after reuse: what was revoked, and the rows that record it. */
export interface FamilyRevocation {
  familyId: string;
  /** the rotated-out token that was used after its grace window */
  reusedTokenId: string;
  revokedBy: string;
  /** token id → its urn (the audit rows' targets) */
  urnOf: (id: string) => string;
  details: Record<string, unknown>;
}

/**
 * Revokes every live token of a family, in the caller's transaction, with an `accessToken.revoke` row per token
 * (reason `reuseDetected`) and one `accessToken.reuseDetected` row on the reused token. Answers the ids revoked and
 * their actor; empty when another replica got there first (so the theft is audited once).
 */
export async function revokeAccessTokenFamily(
  tx: Prisma.TransactionClient,
  revocation: FamilyRevocation,
): Promise<Array<{ id: string; actorUrn: string }>> {
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revocation.revokedBy}
       WHERE family_id = ${revocation.familyId}::uuid AND revoked_at IS NULL
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revocation.revokedBy, "reuseDetected"));
  if (!revoked.some((t) => t.id === revocation.reusedTokenId)) return revoked;
  await insertAuditEventPerTarget(tx, {
    actorUrn: revocation.revokedBy,
    action: "accessToken.revoke",
    targetUrns: revoked.map((t) => revocation.urnOf(t.id)),
    details: { ...revocation.details, bulk: true, reason: "reuseDetected" },
  });
  await insertAuditEvent(tx, {
    actorUrn: revocation.revokedBy,
    action: "accessToken.reuseDetected",
    targetUrn: revocation.urnOf(revocation.reusedTokenId),
    details: { ...revocation.details, familyId: revocation.familyId, revokedTokenIds: revoked.map((t) => t.id) },
  });
  return revoked;
}
