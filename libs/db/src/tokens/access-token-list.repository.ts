import { hash } from "node:crypto";
import { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { withinPolicy, type DurationPolicy } from "./access-token-duration-policy";
import { isAccessTokenId } from "./access-token.repository";
import { accessTokenEventUrn } from "../events/entity-change-events";

/** The token list (access_token): a page of live tokens with its total, its filters as SQL, the owners' page. */

/** One filter of the list (the gateway's token-filters.ts says what each means). */
export type AccessTokenFilter =
  | { field: "actorUrn" | "ownerUrn" | "name" | "id"; values: readonly string[]; negated: boolean }
  | { field: "expiresAt" | "createdAt"; op: "<" | "<=" | ">" | ">="; millis: number }
  | ({ field: "durationPolicy"; outside: boolean } & DurationPolicy)
  /** neither used nor created within the last `days` days */
  | { field: "unusedForDays"; days: number };

/**
 * A token of a list page, as the gateway's TokenMetadata has it (its urn included); times are epoch ms; scopes as
 * stored, null when there are none.
 */
export interface AccessTokenPageToken {
  urn: string;
  id: string;
  name: string;
  description: string | null;
  actorUrn: string;
  ownerUrn: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
  scopes: string[] | null;
  parentTokenId: string | null;
  rotatedFromId: string | null;
  rotatedToId: string | null;
  rotatedAt: number | null;
}

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
 * A page of live tokens (neither revoked nor expired at `now`), newest first, and how many there are in all. Count
 * and page in one statement: one round trip and one snapshot, so `total` and `tokens` always agree (two statements,
 * even in a transaction, each see their own snapshot under READ COMMITTED). The count is split so each half is an
 * index-only range scan of access_token_*_expires_at_idx. The page is joined to the count so that an empty page
 * still brings the total (one row, page columns null); times come back as epoch ms, scopes null when none (pg then
 * skips its array parser). Rows come as arrays, each made once into its token (pg's row objects would be a second copy).
 */
export async function accessTokenPage(
  pool: Queryable,
  filters: readonly AccessTokenFilter[],
  now: Date,
  start: number,
  count: number,
): Promise<{ total: number; tokens: AccessTokenPageToken[] }> {
  // A session is a signed-in user's, not one of the personal access tokens the list is of (DataHub's are not stored).
  const leading = filters.find(isOneUser);
  const where = Prisma.join(
    [
      Prisma.sql`revoked_at IS NULL`,
      Prisma.sql`type <> 'SESSION'`,
      ...filters.map((f) => (leading !== undefined && f === leading ? oneUserCondition(leading) : filterCondition(f))),
    ],
    " AND ",
  );
  const order = leading
    ? Prisma.raw(`${FILTER_COLUMNS[leading.field]}, created_at DESC, id DESC`)
    : Prisma.raw(`created_at DESC, id DESC`);
  // A filter on expiresAt says which expiry times it wants, expired ones included (datahub-gc lists the expired
  // tokens to revoke them); the list is then what the filters select, still never a revoked token.
  const statement = filters.some((f) => f.field === "expiresAt")
    ? Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, ${SCOPES}, p.parent_token_id::text AS parent_token_id,
             p.rotated_from_id::text AS rotated_from_id, p.rotated_to_id::text AS rotated_to_id,
             ${epochMs("p.rotated_at")} AS rotated_at
        FROM (SELECT count(*)::int AS total FROM access_token WHERE ${where}) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token WHERE ${where}
                            ORDER BY ${order}
                            LIMIT ${count} OFFSET ${start}) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`
    : Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, ${SCOPES}, p.parent_token_id::text AS parent_token_id,
             p.rotated_from_id::text AS rotated_from_id, p.rotated_to_id::text AS rotated_to_id,
             ${epochMs("p.rotated_at")} AS rotated_at
        FROM (SELECT ((SELECT count(*) FROM access_token WHERE ${where} AND expires_at IS NULL)
                      + (SELECT count(*) FROM access_token WHERE ${where} AND expires_at > ${now}::timestamptz))::int
                     AS total) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token
                            WHERE ${where} AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                            ORDER BY ${order}
                            LIMIT ${count} OFFSET ${start}) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`;
  // Prepared per filter shape (the text depends on the fields filtered, not the values): planning this statement
  // cost PostgreSQL about as much as running it. Only for a few filters, so each connection keeps a bounded set.
  const name = filters.length <= MAX_PREPARED_FILTERS ? statementName(statement.text) : undefined;
  const { rows } = await pool.query<PageRow>({
    name,
    text: statement.text,
    values: statement.values,
    rowMode: "array",
  });
  const tokens: AccessTokenPageToken[] = [];
  for (const r of rows) {
    if (r[1] === null) continue; // the empty page's row
    tokens.push({
      urn: accessTokenEventUrn(r[1]),
      id: r[1],
      name: r[2],
      description: r[3],
      actorUrn: r[4],
      ownerUrn: r[5],
      createdAt: r[6],
      expiresAt: r[7],
      lastUsedAt: r[8],
      scopes: r[9],
      parentTokenId: r[10],
      rotatedFromId: r[11],
      rotatedToId: r[12],
      rotatedAt: r[13],
    });
  }
  return { total: rows[0]![0], tokens };
}

/** A row of the list statement, its columns in order: the total, and a token of the page (null when it is empty). */
type PageRow = [
  total: number,
  ...[id: string | null, name: string, description: string | null, actorUrn: string, ownerUrn: string],
  ...[createdAt: number, expiresAt: number | null, lastUsedAt: number | null, scopes: string[] | null],
  ...[parentTokenId: string | null, rotatedFromId: string | null, rotatedToId: string | null, rotatedAt: number | null],
];

/** The scopes column, null when there are none (an empty or NULL column). */
const SCOPES = Prisma.raw(`CASE WHEN cardinality(p.scopes) > 0 THEN p.scopes END AS scopes`);

/** statement text → its prepared statement's name; the few filter shapes in use (hashing each request's showed up). */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= 256) statementNames.clear();
    name = `access-token-list-${hash("sha1", text, "hex").slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
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

const isUuid = isAccessTokenId;

/** A plain equality on one actor or owner: "a user's tokens", the list's usual filter. */
type OneUserFilter = { field: "actorUrn" | "ownerUrn"; values: readonly [string]; negated: false };

function isOneUser(filter: AccessTokenFilter): filter is OneUserFilter {
  return (filter.field === "actorUrn" || filter.field === "ownerUrn") && filter.values.length === 1 && !filter.negated;
}

/**
 * A user's tokens are read along its (column, created_at, id) index, whatever the statistics say. With `column = x`
 * PostgreSQL drops the column from the page's order, and then the (created_at, id) index gives the same order: when
 * one user holds most live tokens, it picks that one and steps, a heap fetch each, over every newer token of anyone
 * else before the page (2,000 of them doubled the statement's CPU). Written as ANY of one value, the column stays in
 * the ORDER BY and only the user's index can give that order; the page and its estimate are those of `=`.
 */
function oneUserCondition(filter: OneUserFilter) {
  return Prisma.sql`${Prisma.raw(FILTER_COLUMNS[filter.field])} = ANY(ARRAY[${filter.values[0]}]::text[])`;
}

/**
 * The users who created live personal access tokens (neither revoked nor expired; sessions are not theirs to list),
 * whose urn contains `query` in any case (all without one), in urn order, at most `count` after `start`, and how many
 * there are in all: the owners a token manager filters the list by (DataHub's web app asks listUsers for them).
 */
export async function accessTokenOwnerPage(
  pool: Queryable,
  query: string | undefined,
  start: number,
  count: number,
): Promise<{ total: number; owners: string[] }> {
  const { rows } = await pool.query<{ total: number; owner_urn: string | null }>(
    `WITH owners AS (
       SELECT DISTINCT owner_urn FROM access_token
        WHERE revoked_at IS NULL AND type <> 'SESSION' AND (expires_at IS NULL OR expires_at > now())
          AND ($1::text IS NULL OR strpos(lower(owner_urn), lower($1::text)) > 0))
     SELECT c.total, p.owner_urn
       FROM (SELECT count(*)::int AS total FROM owners) c
       LEFT JOIN LATERAL (SELECT owner_urn FROM owners ORDER BY owner_urn LIMIT $3 OFFSET $2) p ON true
      ORDER BY p.owner_urn`,
    [query ?? null, start, count],
  );
  return {
    total: rows[0]?.total ?? 0,
    owners: rows.flatMap((r) => (r.owner_urn === null ? [] : [r.owner_urn])),
  };
}
