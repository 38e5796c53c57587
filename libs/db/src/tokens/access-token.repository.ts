import { ENTITY_CHANGE_EVENT } from "@mdp/core";
import { boundAuditDetails } from "../audit";
import { Prisma, type AccessToken } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { entityChangePayload, tokenCreateEvent } from "../events/entity-change-events";
import { run } from "./pool-statement";

/**
 * The access_token table: the statements the gateway's token store, verifier, last-use recorder and incident response
 * run on it (the list: access-token-list.repository.ts; revocations: access-token-revocation.repository.ts). The two
 * statements on the hot path (create, list) go through the pg pool directly (pool-statement.ts): Prisma's own
 * per-query work was about a third of the gateway's CPU for each of them. Both are built with Prisma.sql, so still
 * parameterized.
 */

/** A token row to insert, with what its audit row records. */
export interface AccessTokenInsert {
  id: string;
  /** SESSION: a signed-in user's, never listed (accessTokenPage) nor judged by the duration policy */
  type: "PERSONAL" | "SERVICE_ACCOUNT" | "SESSION";
  name: string;
  description: string | null;
  actorUrn: string;
  ownerUrn: string;
  /** the salted hash, hex */
  tokenHash: string;
  /** epoch ms */
  createdAt: number;
  /** epoch seconds; null: never expires */
  expiresAtSeconds: number | null;
  scopes: readonly string[];
  parentTokenId: string | null;
  audit: { actorUrn: string; targetUrn: string; details: Record<string, unknown> };
}

/** What bearer authentication reads of a token's row. */
export type AccessTokenCredentialRow = Pick<
  AccessToken,
  | "type"
  | "tokenHash"
  | "actorUrn"
  | "ownerUrn"
  | "revokedAt"
  | "expiresAt"
  | "scopes"
  | "parentTokenId"
  | "rotatedAt"
  | "familyId"
>;

/**
 * The token, its audit row and its platform event in one statement, so they commit together or not at all (the audit row is inserted
 * from the token's RETURNING), in one round trip. The interactive transaction this replaced took four round trips
 * plus Prisma's transaction bookkeeping, most of the mutation's cost. Always the same text: prepared once per
 * connection, so PostgreSQL parses and plans it once, not per token.
 */
export async function insertAccessTokenWithAudit(pool: Queryable, token: AccessTokenInsert): Promise<void> {
  // Its ACCESS_TOKEN CREATE event (docs/events.md) in the same statement: it commits with the token or not at all.
  const event = tokenCreateEvent(token, token.audit.actorUrn);
  const statement = Prisma.sql`
      WITH token AS (
        INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at,
                                  scopes, parent_token_id)
        VALUES (${token.id}::uuid, ${token.type}::"AccessTokenType", ${token.name}, ${token.description},
                ${token.actorUrn}, ${token.ownerUrn}, ${token.tokenHash},
                to_timestamp(${token.createdAt}::int8 / 1000.0), to_timestamp(${token.expiresAtSeconds}::int8),
                ${token.scopes}::text[], ${token.parentTokenId}::uuid)
        RETURNING id
      ), event AS (
        INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
        SELECT ${ENTITY_CHANGE_EVENT}, ${event.entityUrn}, ${event.entityType}, ${event.category}, ${event.subjectActor},
               ${JSON.stringify(entityChangePayload(event))}::jsonb
          FROM token
      )
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT ${token.audit.actorUrn}, 'accessToken.create', ${token.audit.targetUrn}, ${JSON.stringify(boundAuditDetails(token.audit.details))}::jsonb
        FROM token`;
  await run(pool, statement, "access-token-create");
}

/** The token of that id (in any letter case, as PostgreSQL matches a uuid), or null; not a uuid: null. */
export async function findAccessToken(
  prisma: Pick<Prisma.TransactionClient, "accessToken">,
  id: string,
): Promise<AccessToken | null> {
  return isUuid(id) ? prisma.accessToken.findUnique({ where: { id } }) : null;
}

/** What bearer authentication reads of a token's row, or null (not a uuid: null). */
export async function findAccessTokenCredential(
  prisma: Pick<Prisma.TransactionClient, "accessToken">,
  id: string,
): Promise<AccessTokenCredentialRow | null> {
  if (!isUuid(id)) return null;
  return prisma.accessToken.findUnique({
    where: { id },
    select: {
      type: true,
      tokenHash: true,
      actorUrn: true,
      ownerUrn: true,
      revokedAt: true,
      expiresAt: true,
      scopes: true,
      parentTokenId: true,
      rotatedAt: true,
      familyId: true,
    },
  });
}

/**
 * Records uses of tokens (id → time of its latest use here) in one statement. Several replicas flush independently;
 * GREATEST keeps the newest use.
 */
export async function recordAccessTokenUses(
  prisma: Pick<Prisma.TransactionClient, "$executeRaw">,
  ids: readonly string[],
  times: readonly Date[],
): Promise<void> {
  await prisma.$executeRaw`
        UPDATE access_token AS t SET last_used_at = GREATEST(t.last_used_at, u.used_at)
        FROM unnest(${ids}::uuid[], ${times}::timestamptz[]) AS u(id, used_at)
        WHERE t.id = u.id`;
}

/**
 * Tokens minted by `ownerUrn` and/or with the token `parentTokenId`, newest first, at most `limit` (delegatedWork).
 * access_token.parent_token_id is a uuid: another id was never a parent.
 */
export async function accessTokensMintedBy(
  prisma: Pick<Prisma.TransactionClient, "accessToken">,
  by: { ownerUrn?: string; parentTokenId?: string },
  limit: number,
): Promise<AccessToken[]> {
  if (by.parentTokenId !== undefined && !isUuid(by.parentTokenId)) return [];
  return prisma.accessToken.findMany({
    where: {
      ...(by.ownerUrn !== undefined && { ownerUrn: by.ownerUrn }),
      ...(by.parentTokenId !== undefined && { parentTokenId: by.parentTokenId }),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit,
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Whether `value` can be an access_token id (a uuid column: PostgreSQL refuses anything else). */
export const isAccessTokenId = (value: string): boolean => UUID.test(value);
const isUuid = isAccessTokenId;
