import { hash } from "node:crypto";
import { makeUrn } from "@mdp/core";
import { boundAuditDetails, Prisma, type AccessToken, type Database, type PrismaClient } from "@mdp/db";
import type pg from "pg";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { canonicalPrivilege, type Privilege } from "../policies/privileges";
import type { TokenFilter } from "./token-filters";

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
}

/** A token's row as the service reads it to authorize and answer: its metadata, its salted hash, its revocation. */
export interface StoredToken {
  metadata: TokenMetadata;
  /** the stored salted hash, hex */
  tokenHash: string;
  revoked: boolean;
}

/**
 * What the verifier needs of a row to accept or refuse a bearer token, and to build its chain (its minter, the token it
 * was minted with): the same row serves when the token is the credential and when it is another token's parent.
 */
export interface TokenCredential {
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
}

/** A token to insert: its metadata, its salted hash, and what its audit row records. */
export interface NewToken {
  type: "PERSONAL";
  metadata: TokenMetadata;
  tokenHash: string;
  /** epoch seconds; undefined: never expires */
  exp: number | undefined;
  audit: { actorUrn: string; details: Record<string, unknown> };
}

/** filterable fields → their columns (what each filter means: token-filters.ts) */
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
 * The access_token table: the statements every token operation runs, and their rows mapped to TokenMetadata. Prisma's
 * pool is used directly for the two statements on the hot path (create, list): Prisma's own per-query work was about
 * a third of the gateway's CPU for each of them. Both are built with Prisma.sql, so still parameterized.
 */
export class TokenStore {
  private readonly prisma: PrismaClient;
  private readonly pool: pg.Pool;

  constructor(
    db: Pick<Database, "prisma" | "pool">,
    private readonly urnNamespace: string,
  ) {
    this.prisma = db.prisma;
    this.pool = db.pool;
  }

  urnOf(id: string): string {
    return makeUrn(this.urnNamespace, "accessToken", id);
  }

  /**
   * The token and its audit row in one statement, so they commit together or not at all (the audit row is inserted
   * from the token's RETURNING), in one round trip. The interactive transaction this replaced took four round trips
   * plus Prisma's transaction bookkeeping, most of the mutation's cost. Always the same text: prepared once per
   * connection, so PostgreSQL parses and plans it once, not per token.
   */
  async insert(token: NewToken): Promise<void> {
    const { metadata } = token;
    const statement = Prisma.sql`
      WITH token AS (
        INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at,
                                  scopes, parent_token_id)
        VALUES (${metadata.id}::uuid, ${token.type}::"AccessTokenType", ${metadata.name}, ${metadata.description},
                ${metadata.actorUrn}, ${metadata.ownerUrn}, ${token.tokenHash},
                to_timestamp(${metadata.createdAt}::int8 / 1000.0), to_timestamp(${token.exp ?? null}::int8),
                ${metadata.scopes ?? []}::text[], ${metadata.parentTokenId}::uuid)
        RETURNING id
      )
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT ${token.audit.actorUrn}, 'accessToken.create', ${metadata.urn}, ${JSON.stringify(boundAuditDetails(token.audit.details))}::jsonb
        FROM token`;
    await this.run(statement, "access-token-create");
  }

  /**
   * A page of live tokens (neither revoked nor expired at `now`), newest first, and how many there are in all. Count
   * and page in one statement: one round trip and one snapshot, so `total` and `tokens` always agree (two statements,
   * even in a transaction, each see their own snapshot under READ COMMITTED). The count is split so each half is an
   * index-only range scan of access_token_*_expires_at_idx. The page is joined to the count so that an empty page
   * still brings the total (one row, page columns null); times come back as epoch ms.
   */
  async page(
    filters: readonly TokenFilter[],
    now: Date,
    start: number,
    count: number,
  ): Promise<{ total: number; tokens: TokenMetadata[] }> {
    const where = Prisma.join([Prisma.sql`revoked_at IS NULL`, ...filters.map(filterCondition)], " AND ");
    // A filter on expiresAt says which expiry times it wants, expired ones included (datahub-gc lists the expired
    // tokens to revoke them); the list is then what the filters select, still never a revoked token.
    const statement = filters.some((f) => f.field === "expiresAt")
      ? Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, p.scopes, p.parent_token_id::text AS parent_token_id
        FROM (SELECT count(*)::int AS total FROM access_token WHERE ${where}) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token WHERE ${where}
                            ORDER BY created_at DESC, id DESC
                            LIMIT ${count} OFFSET ${start}) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`
      : Prisma.sql`
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at, p.scopes, p.parent_token_id::text AS parent_token_id
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
    const rows = await this.run<PageRow>(statement, name);
    const tokens = rows
      .filter((row): row is PageRow & { id: string } => row.id !== null)
      .map((row) => this.metadataOfPageRow(row));
    return { total: rows[0]!.total, tokens };
  }

  /** The token of that id (in any letter case, as PostgreSQL matches a uuid), or null; not a uuid: null. */
  async find(id: string): Promise<StoredToken | null> {
    const row = isUuid(id) ? await this.prisma.accessToken.findUnique({ where: { id } }) : null;
    return row && { metadata: this.metadataOf(row), tokenHash: row.tokenHash, revoked: row.revokedAt !== null };
  }

  /** What bearer authentication reads of a token's row, or null. */
  async credentialOf(id: string): Promise<TokenCredential | null> {
    if (!isUuid(id)) return null;
    const row = await this.prisma.accessToken.findUnique({
      where: { id },
      select: {
        tokenHash: true,
        actorUrn: true,
        ownerUrn: true,
        revokedAt: true,
        expiresAt: true,
        scopes: true,
        parentTokenId: true,
      },
    });
    if (!row) return null;
    return {
      tokenHash: Buffer.from(row.tokenHash, "hex"),
      actorUrn: row.actorUrn,
      ownerUrn: row.ownerUrn,
      revoked: row.revokedAt !== null,
      expiresAt: row.expiresAt?.getTime() ?? null,
      scopes: scopesOf(row.scopes) ?? undefined,
      parentTokenId: row.parentTokenId,
    };
  }

  /** Marks the token revoked by `actor`, with its audit row, in one transaction. */
  async revoke(token: TokenMetadata, actor: Actor): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await tx.accessToken.update({ where: { id: token.id }, data: { revokedAt: new Date(), revokedBy: actor.urn } });
      await recordAudit(tx, actor, "accessToken.revoke", this.urnOf(token.id), { actorUrn: token.actorUrn });
    });
  }

  /**
   * Revokes every live token (neither revoked nor expired) acting for `actorUrn`, by `actor`, in one transaction with
   * an audit row per token (`accessToken.revoke`, as one revocation writes, marked `bulk`) and one for the whole
   * (`accessToken.revokeAll`, on the user, with the count). Returns the ids revoked. A token created after this
   * commits is not affected.
   */
  async revokeAllOf(actorUrn: string, actor: Actor): Promise<string[]> {
    return this.prisma.$transaction((tx) => this.revokeAllOfIn(tx, actorUrn, actor));
  }

  /** revokeAllOf in the caller's transaction (revokeActorAccess: with the suspension of the user's work). */
  async revokeAllOfIn(tx: Prisma.TransactionClient, actorUrn: string, actor: Actor): Promise<string[]> {
    const revoked = await tx.$queryRaw<Array<{ id: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${actor.urn}
       WHERE actor_urn = ${actorUrn} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      RETURNING id::text`;
    const ids = revoked.map((row) => row.id);
    const details = JSON.stringify(boundAuditDetails({ actorUrn, bulk: true, via: actor.via }));
    await tx.$executeRaw`
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT ${actor.urn}, 'accessToken.revoke', urn, ${details}::jsonb
        FROM unnest(${ids.map((id) => this.urnOf(id))}::text[]) AS urn`;
    await recordAudit(tx, actor, "accessToken.revokeAll", actorUrn, { count: ids.length });
    return ids;
  }

  /** `name`: a prepared statement of that name (for a statement whose text never changes). */
  private async run<Row extends pg.QueryResultRow>(statement: Prisma.Sql, name?: string): Promise<Row[]> {
    return (await this.pool.query<Row>({ name, text: statement.text, values: statement.values })).rows;
  }

  private metadataOfPageRow(row: PageRow & { id: string }): TokenMetadata {
    return {
      urn: this.urnOf(row.id),
      id: row.id,
      name: row.name,
      description: row.description,
      actorUrn: row.actor_urn,
      ownerUrn: row.owner_urn,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
      scopes: scopesOf(row.scopes),
      parentTokenId: row.parent_token_id,
    };
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
    };
  }
}

/** A row of the list statement: the total, and a token of the page (all null when the page is empty). */
interface PageRow {
  total: number;
  id: string | null;
  name: string;
  description: string | null;
  actor_urn: string;
  owner_urn: string;
  /** epoch ms */
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  scopes: string[] | null;
  parent_token_id: string | null;
}

/**
 * A row's scopes, or null for an unscoped token (an empty or NULL column). Names were checked when the token was
 * made; one no longer known (a privilege since removed from the service) grants nothing.
 */
function scopesOf(stored: readonly string[] | null): Privilege[] | null {
  if (!stored || stored.length === 0) return null;
  return stored.flatMap((name) => canonicalPrivilege(name) ?? []);
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
function filterCondition(filter: TokenFilter) {
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
const isUuid = (value: string) => UUID.test(value);
