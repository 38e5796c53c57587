import { hash } from "node:crypto";
import { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { withinPolicy, type DurationPolicy } from "./access-token-duration-policy";
import { isAccessTokenId } from "./access-token.repository";
import { run } from "./pool-statement";

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
 * index-only range scan of access_token_*_expires_at_idx. PostgreSQL builds the page as one JSON text, its tokens
 * already shaped as AccessTokenPageToken: one JSON.parse instead of pg's JavaScript parser per column and row, and
 * no second copy of each token to map it.
 */
export async function accessTokenPage(
  pool: Queryable,
  filters: readonly AccessTokenFilter[],
  now: Date,
  start: number,
  count: number,
): Promise<{ total: number; tokens: AccessTokenPageToken[] }> {
  // A session is a signed-in user's, not one of the personal access tokens the list is of (DataHub's are not stored).
  const where = Prisma.join(
    [Prisma.sql`revoked_at IS NULL`, Prisma.sql`type <> 'SESSION'`, ...filters.map(filterCondition)],
    " AND ",
  );
  // A filter on expiresAt says which expiry times it wants, expired ones included (datahub-gc lists the expired
  // tokens to revoke them); the list is then what the filters select, still never a revoked token.
  const statement = filters.some((f) => f.field === "expiresAt")
    ? Prisma.sql`
      SELECT (SELECT count(*) FROM access_token WHERE ${where})::int AS total,
             (SELECT ${PAGE_JSON} FROM (SELECT * FROM access_token WHERE ${where}
                                         ORDER BY created_at DESC, id DESC
                                         LIMIT ${count} OFFSET ${start}) AS p)::text AS tokens`
    : Prisma.sql`
      SELECT ((SELECT count(*) FROM access_token WHERE ${where} AND expires_at IS NULL)
              + (SELECT count(*) FROM access_token WHERE ${where} AND expires_at > ${now}::timestamptz))::int AS total,
             (SELECT ${PAGE_JSON} FROM (SELECT * FROM access_token
                                         WHERE ${where} AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                                         ORDER BY created_at DESC, id DESC
                                         LIMIT ${count} OFFSET ${start}) AS p)::text AS tokens`;
  // Prepared per filter shape (the text depends on the fields filtered, not the values): planning this statement
  // cost PostgreSQL about as much as running it. Only for a few filters, so each connection keeps a bounded set.
  const name = filters.length <= MAX_PREPARED_FILTERS ? statementName(statement.text) : undefined;
  const [row] = await run<{ total: number; tokens: string | null }>(pool, statement, name);
  // An empty page aggregates to NULL.
  return { total: row!.total, tokens: row!.tokens === null ? [] : (JSON.parse(row!.tokens) as AccessTokenPageToken[]) };
}

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

/** A timestamptz(3) column as epoch ms: exact for any ms timestamp, a JSON integer. */
const epochMs = (column: string) => `round(date_part('epoch', ${column}) * 1000)::int8`;

/**
 * The page's tokens (the rows of p) as a JSON array of AccessTokenPageToken, newest first; the urn is
 * entity-change-events.ts accessTokenEventUrn's.
 */
const PAGE_JSON = Prisma.raw(`json_agg(json_build_object(
    'urn', 'urn:li:dataHubAccessToken:' || p.id, 'id', p.id, 'name', p.name, 'description', p.description,
    'actorUrn', p.actor_urn, 'ownerUrn', p.owner_urn, 'createdAt', ${epochMs("p.created_at")},
    'expiresAt', ${epochMs("p.expires_at")}, 'lastUsedAt', ${epochMs("p.last_used_at")},
    'scopes', CASE WHEN cardinality(p.scopes) > 0 THEN p.scopes END, 'parentTokenId', p.parent_token_id,
    'rotatedFromId', p.rotated_from_id, 'rotatedToId', p.rotated_to_id, 'rotatedAt', ${epochMs("p.rotated_at")})
  ORDER BY p.created_at DESC, p.id DESC)`);

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
