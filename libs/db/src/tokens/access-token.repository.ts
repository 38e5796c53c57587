import { hash } from "node:crypto";
import { ENTITY_CHANGE_EVENT } from "@mdp/core";
import type pg from "pg";
import { boundAuditDetails } from "../audit";
import { Prisma, type AccessToken } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import {
  entityChangePayload,
  insertEntityChangeEvents,
  tokenCreateEvent,
  tokenRevokeEvents,
  type TokenRevokeReason,
} from "../events/entity-change-events";

/**
 * The access_token table: every statement the gateway's token store, verifier, last-use recorder and incident response
 * run on it. The two statements on the hot path (create, list) go through the pg pool directly: Prisma's own
 * per-query work was about a third of the gateway's CPU for each of them. Both are built with Prisma.sql, so still
 * parameterized.
 */

/** A token row to insert, with what its audit row records. */
export interface AccessTokenInsert {
  id: string;
  type: "PERSONAL" | "SERVICE_ACCOUNT";
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

/** One filter of the list (the gateway's token-filters.ts says what each means). */
export type AccessTokenFilter =
  | { field: "actorUrn" | "ownerUrn" | "name" | "id"; values: readonly string[]; negated: boolean }
  | { field: "expiresAt" | "createdAt"; op: "<" | "<=" | ">" | ">="; millis: number }
  | ({ field: "durationPolicy"; outside: boolean } & DurationPolicy)
  /** neither used nor created within the last `days` days */
  | { field: "unusedForDays"; days: number };

/** ACCESS_TOKEN_ALLOWED_DURATIONS and ACCESS_TOKEN_ALLOW_NO_EXPIRY: the lifetimes a token may have. */
export interface DurationPolicy {
  allowedSeconds: readonly number[];
  allowNoExpiry: boolean;
}

/** A token of a list page; times are epoch ms. */
export interface AccessTokenPageRow {
  id: string;
  name: string;
  description: string | null;
  actor_urn: string;
  owner_urn: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  scopes: string[] | null;
  parent_token_id: string | null;
  rotated_from_id: string | null;
  rotated_to_id: string | null;
  rotated_at: number | null;
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

/** filterable fields → their columns */
const FILTER_COLUMNS = {
  actorUrn: "actor_urn",
  ownerUrn: "owner_urn",
  name: "name",
  id: "id",
  expiresAt: "expires_at",
  createdAt: "created_at",
} as const;
const MAX_PREPARED_FILTERS = 4;

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

/**
 * A page of live tokens (neither revoked nor expired at `now`), newest first, and how many there are in all. Count
 * and page in one statement: one round trip and one snapshot, so `total` and `tokens` always agree (two statements,
 * even in a transaction, each see their own snapshot under READ COMMITTED). The count is split so each half is an
 * index-only range scan of access_token_*_expires_at_idx. The page is joined to the count so that an empty page
 * still brings the total (one row, page columns null); times come back as epoch ms.
 */
export async function accessTokenPage(
  pool: Queryable,
  filters: readonly AccessTokenFilter[],
  now: Date,
  start: number,
  count: number,
): Promise<{ total: number; rows: AccessTokenPageRow[] }> {
  const where = Prisma.join([Prisma.sql`revoked_at IS NULL`, ...filters.map(filterCondition)], " AND ");
  // A filter on expiresAt says which expiry times it wants, expired ones included (datahub-gc lists the expired
  // tokens to revoke them); the list is then what the filters select, still never a revoked token.
  const statement = filters.some((f) => f.field === "expiresAt")
    ? Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, p.scopes, p.parent_token_id::text AS parent_token_id,
             p.rotated_from_id::text AS rotated_from_id, p.rotated_to_id::text AS rotated_to_id,
             ${epochMs("p.rotated_at")} AS rotated_at
        FROM (SELECT count(*)::int AS total FROM access_token WHERE ${where}) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token WHERE ${where}
                            ORDER BY created_at DESC, id DESC
                            LIMIT ${count} OFFSET ${start}) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`
    : Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, p.scopes, p.parent_token_id::text AS parent_token_id,
             p.rotated_from_id::text AS rotated_from_id, p.rotated_to_id::text AS rotated_to_id,
             ${epochMs("p.rotated_at")} AS rotated_at
        FROM (SELECT ((SELECT count(*) FROM access_token WHERE ${where} AND expires_at IS NULL)
                      + (SELECT count(*) FROM access_token WHERE ${where} AND expires_at > ${now}::timestamptz))::int
                     AS total) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token
                            WHERE ${where} AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                            ORDER BY created_at DESC, id DESC
                            LIMIT ${count} OFFSET ${start}) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`;
  // Prepared per filter shape (the text depends on the fields filtered, not the values): planning this statement
  // cost PostgreSQL about as much as running it. Only for a few filters, so each connection keeps a bounded set.
  const name =
    filters.length <= MAX_PREPARED_FILTERS
      ? `access-token-list-${hash("sha1", statement.text, "hex").slice(0, 16)}`
      : undefined;
  const rows = await run<{ total: number } & NullablePageRow>(pool, statement, name);
  return {
    total: rows[0]!.total,
    rows: rows.filter((row): row is { total: number } & AccessTokenPageRow => row.id !== null),
  };
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
 * Marks one token revoked by `revokedBy`, with its ACCESS_TOKEN REVOKE event, in the caller's transaction (its audit
 * row goes with it); one already revoked is left as it was.
 */
export async function revokeAccessToken(
  tx: Prisma.TransactionClient,
  id: string,
  revokedBy: string,
  reason: TokenRevokeReason = "revoked",
): Promise<void> {
  // Only a token not revoked yet: two revocations at once write one event (the second waits for the first's row lock).
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE id = ${id}::uuid AND revoked_at IS NULL
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, reason));
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

/** A row of the list statement: the total, and a token of the page (all null when the page is empty). */
type NullablePageRow = Omit<AccessTokenPageRow, "id"> & { id: string | null };

/** `name`: a prepared statement of that name (for a statement whose text never changes). */
async function run<Row extends pg.QueryResultRow>(pool: Queryable, statement: Prisma.Sql, name?: string) {
  return (await pool.query<Row>({ name, text: statement.text, values: statement.values })).rows;
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
       WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AND NOT ${withinPolicy(policy)}
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, "durationPolicy"));
  return revoked;
}

/**
 * Whether a row's lifetime is one the policy allows: a token expires a whole number of seconds after the second it
 * was created in (createAccessToken), so its lifetime is exact; one that never expires only with allowNoExpiry. A
 * rotated-out token's expiry is the end of its grace window (at most a day): its successor is what the policy judges.
 */
function withinPolicy(policy: DurationPolicy): Prisma.Sql {
  return Prisma.sql`(CASE WHEN rotated_at IS NOT NULL THEN true WHEN expires_at IS NULL THEN ${policy.allowNoExpiry}::boolean
      ELSE round(date_part('epoch', expires_at - date_trunc('second', created_at)))::int8
           = ANY(${[...policy.allowedSeconds]}::int8[]) END)`;
}

/** A timestamptz(3) column as epoch ms: a double, which pg hands over as a number, exact for any ms timestamp. */
function epochMs(column: string): Prisma.Sql {
  return Prisma.raw(`round(date_part('epoch', ${column}) * 1000)`);
}

/**
 * One filter as SQL: `=` for one value, so the (column, created_at) index also gives the order; ANY for several; NOT
 * for negated; a time compared with an epoch-ms value (a token that never expires has no expiry to compare: it
 * matches no comparison).
 */
function filterCondition(filter: AccessTokenFilter) {
  if (filter.field === "durationPolicy") {
    return filter.outside ? Prisma.sql`NOT ${withinPolicy(filter)}` : withinPolicy(filter);
  }
  if (filter.field === "unusedForDays") {
    // last_used_at is at most a flush (seconds) behind: days are what this filter counts.
    return Prisma.sql`COALESCE(last_used_at, created_at) < now() - make_interval(days => ${filter.days}::int)`;
  }
  const column = Prisma.raw(FILTER_COLUMNS[filter.field]);
  if (!("values" in filter)) {
    return Prisma.sql`${column} ${Prisma.raw(filter.op)} to_timestamp(${filter.millis}::int8 / 1000.0)`;
  }
  let condition;
  if (filter.field !== "id") {
    condition =
      filter.values.length === 1
        ? Prisma.sql`${column} = ${filter.values[0]}`
        : Prisma.sql`${column} = ANY(${filter.values}::text[])`;
  } else {
    const ids = filter.values.filter(isUuid);
    if (ids.length === 0) condition = Prisma.sql`FALSE`;
    else condition = ids.length === 1 ? Prisma.sql`id = ${ids[0]}::uuid` : Prisma.sql`id = ANY(${ids}::uuid[])`;
  }
  return filter.negated ? Prisma.sql`NOT (${condition})` : condition;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Whether `value` can be an access_token id (a uuid column: PostgreSQL refuses anything else). */
export const isAccessTokenId = (value: string): boolean => UUID.test(value);
const isUuid = isAccessTokenId;
