import { hash, randomUUID } from "node:crypto";
import {
  badInput,
  forbidden,
  makeUrn,
  notFound,
  parseUrnField,
  requireIdLength,
  requireLength,
  unauthenticated,
  type Config,
} from "@mdp/core";
import { Prisma, type AccessToken, type Database, type PrismaClient } from "@mdp/db";
import type pg from "pg";
import type { Actor } from "../auth/actor";
import { safeEqual } from "../auth/constant-time";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";
import { privilegesMissing } from "../policies/privileges";
import { Hs256, JwtError, type AccessTokenClaims } from "./jwt";
import type { LastUsedRecorder } from "./last-used.recorder";
import { digestMatches, hashToken, tokenDigest } from "./token-hash";

const HOUR = 3600;
const DAY = 24 * HOUR;
export const DURATIONS = {
  ONE_HOUR: HOUR,
  ONE_DAY: DAY,
  ONE_WEEK: 7 * DAY,
  ONE_MONTH: 30 * DAY,
  THREE_MONTHS: 90 * DAY,
  SIX_MONTHS: 180 * DAY,
  ONE_YEAR: 365 * DAY,
  NO_EXPIRY: null,
} as const;
export type AccessTokenDuration = keyof typeof DURATIONS;

export const TOKEN_ISSUER = "metadata-admin";
const TOKEN_VERSION = 2;
/** filterable fields → their columns */
const FILTER_COLUMNS = { actorUrn: "actor_urn", ownerUrn: "owner_urn", name: "name", id: "id" } as const;
const MAX_PREPARED_FILTERS = 4;

export interface CreateTokenInput {
  type: "PERSONAL";
  actorUrn: string;
  duration: AccessTokenDuration;
  name: string;
  description?: string | null;
}

export interface ListTokensInput {
  start?: number | null;
  count?: number | null;
  filters?: Array<{ field: string; value?: string | null; values?: string[] | null }> | null;
}

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
}

/** What a replica remembers about a token it has verified: enough to refuse it without PostgreSQL once revoked. */
interface KnownToken {
  /** the stored hash, as bytes */
  tokenHash: Buffer;
  actorUrn: string;
  revoked: boolean;
  cachedAt: number;
}

/**
 * A safety net only: revocations reach every replica over pub/sub at once, and the cache is not read at all while the
 * bus cannot vouch for the channel (InvalidationBus.isLive).
 */
const TOKEN_CACHE_MAX_AGE_MS = 30_000;
const TOKEN_CACHE_MAX_ENTRIES = 50_000;

/**
 * Personal access tokens (CONTRACT.md "Tokens"): HS256 JWTs of which only a salted hash is stored. Every operation
 * needs at least GENERATE_PERSONAL_ACCESS_TOKENS; acting on other users' tokens needs MANAGE_ACCESS_TOKENS.
 */
export class TokenService {
  private readonly prisma: PrismaClient;
  /**
   * Prisma's pool, used directly for the two statements on the hot path (create, list): Prisma's own per-query work
   * was about a third of the gateway's CPU for each of them. Both are built with Prisma.sql, so still parameterized.
   */
  private readonly pool: pg.Pool;
  private readonly jwt: Hs256;
  private readonly known = new Map<string, KnownToken>();
  /**
   * The claims of tokens that passed the full check, by the SHA-256 of the token (a one-way digest of 256 random bits
   * of signature, no more use to a reader of this memory than the salted hashes in the table). Claims never change;
   * whether the token still counts is its row's, looked up on every use.
   */
  private readonly verified = new Map<string, AccessTokenClaims>();
  /** bumped by every invalidation, so a lookup that raced with a revocation does not cache what it read */
  private generation = 0;

  constructor(
    db: Pick<Database, "prisma" | "pool">,
    private readonly policies: PolicyEngine,
    private readonly bus: InvalidationBus,
    private readonly lastUsed: LastUsedRecorder,
    private readonly config: Pick<
      Config,
      "TOKEN_SIGNING_KEY" | "TOKEN_SALT" | "URN_NAMESPACE" | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
    >,
  ) {
    this.prisma = db.prisma;
    this.pool = db.pool;
    this.jwt = new Hs256(config.TOKEN_SIGNING_KEY);
    bus.onInvalidation((event) => {
      if (event.kind !== "token-revoked") return;
      this.generation++;
      this.known.delete(event.tokenId);
    });
    bus.onReset(() => {
      this.generation++;
      this.known.clear();
    });
  }

  async create(actor: Actor, input: CreateTokenInput): Promise<{ accessToken: string; metadata: TokenMetadata }> {
    await this.requireTokenApi(actor, "generate access tokens");
    parseUrnField("input.actorUrn", input.actorUrn, "corpuser");
    if (input.actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "generate access tokens for other users");
      await this.requireNoStrongerThanMinter(actor, input.actorUrn);
    }
    const name = input.name.trim();
    requireLength("input.name", name, { min: 1, max: 256 });
    requireLength("input.description", input.description ?? "", { max: 2000 });
    const seconds = DURATIONS[input.duration];
    if (seconds === null && !this.config.ACCESS_TOKEN_ALLOW_NO_EXPIRY) {
      throw badInput("input.duration NO_EXPIRY is not allowed on this server (ACCESS_TOKEN_ALLOW_NO_EXPIRY=false)");
    }

    const id = randomUUID();
    // The creation time to the millisecond, so the list (newest first) keeps the order of tokens made within one
    // second; the claims and the expiry to the second, so the stored expiry and the token's exp claim are the same
    // instant: a token expires `duration` after the second it was issued in.
    const createdAt = Date.now();
    const issuedAt = Math.floor(createdAt / 1000);
    const exp = seconds === null ? undefined : issuedAt + seconds;
    const accessToken = this.jwt.sign({
      sub: input.actorUrn,
      jti: id,
      type: input.type,
      iat: issuedAt,
      iss: TOKEN_ISSUER,
      ver: TOKEN_VERSION,
      ...(exp === undefined ? {} : { exp }),
    });
    const metadata: TokenMetadata = {
      urn: this.urnOf(id),
      id,
      name,
      description: input.description ?? null,
      actorUrn: input.actorUrn,
      ownerUrn: actor.urn,
      createdAt,
      expiresAt: exp === undefined ? null : exp * 1000,
      lastUsedAt: null,
    };
    const { statement, name: statementName } = createStatement({
      id,
      type: input.type,
      metadata,
      tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
      createdAt,
      exp,
      // The details recordAudit would write.
      audit: {
        actorUrn: actor.urn,
        details: { name, actorUrn: input.actorUrn, duration: input.duration, via: actor.via },
      },
    });
    await this.run(statement, statementName);
    return { accessToken, metadata };
  }

  /**
   * A token never carries more power than its minter: the actor it is for may hold no privilege the minter lacks, or
   * MANAGE_ACCESS_TOKENS would mint a root token. The system client is exempt: it is trusted to act for any user
   * (X-Platform-Actor), so it could act as that actor anyway. The refusal does not list the privileges, which would
   * tell the minter what the other actor holds.
   */
  private async requireNoStrongerThanMinter(minter: Actor, actorUrn: string): Promise<void> {
    if (minter.via === "system") return;
    const [held, wanted] = await Promise.all([
      this.policies.privilegesOf(minter.urn),
      this.policies.privilegesOf(actorUrn),
    ]);
    if (privilegesMissing(held, wanted).length > 0) {
      throw forbidden(
        `${minter.urn} is unauthorized to generate access tokens for ${actorUrn}: it holds privileges you do not.`,
      );
    }
  }

  async list(actor: Actor, input: ListTokensInput) {
    await this.requireTokenApi(actor, "list access tokens");
    const { start, count } = pageOf(input);
    const filters = (input.filters ?? []).map((f, i) => {
      // Own keys only: "constructor" or "toString" must not find Object.prototype's.
      const column = Object.hasOwn(FILTER_COLUMNS, f.field)
        ? FILTER_COLUMNS[f.field as keyof typeof FILTER_COLUMNS]
        : undefined;
      if (!column) {
        throw badInput(
          `input.filters[${i}].field '${f.field}' is not filterable; use one of ${Object.keys(FILTER_COLUMNS).join(", ")}`,
        );
      }
      // As in DataHub, `values` when it holds any, else `value`.
      const fromValues = Boolean(f.values?.length);
      const values = fromValues ? f.values! : f.value != null ? [f.value] : [];
      if (values.length === 0) throw badInput(`input.filters[${i}] needs a value or values`);
      // A mistyped user ("alice") would otherwise list nothing, which reads as "alice has no tokens".
      if (column === "actor_urn" || column === "owner_urn") {
        values.forEach((value, j) =>
          parseUrnField(`input.filters[${i}].${fromValues ? `values[${j}]` : "value"}`, value, "corpuser"),
        );
      }
      return { column, values };
    });
    if (!(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
      const ownOnly = filters.some(
        (f) =>
          (f.column === "actor_urn" || f.column === "owner_urn") && f.values.length === 1 && f.values[0] === actor.urn,
      );
      if (!ownOnly) {
        throw forbidden(
          `${actor.urn} is unauthorized to list access tokens of other users: filter on actorUrn or ownerUrn equal to your own urn, or hold MANAGE_ACCESS_TOKENS.`,
        );
      }
    }
    const { statement, name } = listStatement(filters, new Date(), start, count);
    const rows = await this.run<PageRow>(statement, name);
    const tokens = rows
      .filter((row): row is PageRow & { id: string } => row.id !== null)
      .map((row) => this.metadataOfPageRow(row));
    return { start, count: tokens.length, total: rows[0]!.total, tokens };
  }

  async revoke(actor: Actor, tokenId: string): Promise<boolean> {
    await this.requireTokenApi(actor, "revoke access tokens");
    requireIdLength("tokenId", tokenId);
    const token = isUuid(tokenId) ? await this.prisma.accessToken.findUnique({ where: { id: tokenId } }) : null;
    // Whether the caller may revoke it is settled before whether it exists is told: without MANAGE_ACCESS_TOKENS, an
    // unknown id gets the same 403 as another user's token.
    const own = token !== null && (token.ownerUrn === actor.urn || token.actorUrn === actor.urn);
    if (!own && !(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
      throw forbidden(
        `${actor.urn} is unauthorized to revoke access token ${tokenId}: it is not one of yours, and revoking ` +
          `other users' tokens needs MANAGE_ACCESS_TOKENS.`,
      );
    }
    if (!token) throw notFound(`Access token ${tokenId} does not exist`);
    // From here on the row's id, not the one given: PostgreSQL matched it in any letter case, while the caches of
    // every replica know the token by the lower-case id of its claims.
    const { id } = token;
    if (token.revokedAt === null) {
      await this.prisma.$transaction(async (tx) => {
        await tx.accessToken.update({ where: { id }, data: { revokedAt: new Date(), revokedBy: actor.urn } });
        await recordAudit(tx, actor, "accessToken.revoke", this.urnOf(id), { actorUrn: token.actorUrn });
      });
    }
    this.known.delete(id);
    // The commit above is what revokes; this only shortens other replicas' caches, bounded, never failing the call.
    await this.bus.publish({ kind: "token-revoked", tokenId: id });
    return true;
  }

  async metadataFor(actor: Actor, token: string): Promise<TokenMetadata> {
    await this.requireTokenApi(actor, "read access token metadata");
    // The token asked about is not the caller's credential: one that fails its checks is unknown here, not a reason to
    // answer UNAUTHENTICATED (which clients take to mean their own session has ended).
    let claims: AccessTokenClaims;
    try {
      claims = this.jwt.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw notFound("Access token does not exist");
      throw error;
    }
    // Checked on the signed claims, before the row is looked up: the answer to another user's token does not depend
    // on whether it still exists. A row whose actor differs from its claims' is refused below as unknown.
    if (claims.sub !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "read the metadata of other users' access tokens");
    }
    const row = isUuid(claims.jti) ? await this.prisma.accessToken.findUnique({ where: { id: claims.jti } }) : null;
    if (!row || row.actorUrn !== claims.sub || !safeEqual(row.tokenHash, hashToken(token, this.config.TOKEN_SALT))) {
      throw notFound("Access token does not exist");
    }
    // Its metadata would read as a live token's (it has no field for revocation); DataHub deletes a revoked token's.
    if (row.revokedAt !== null) throw notFound("Access token has been revoked");
    return this.metadataOf(row);
  }

  /**
   * Authenticates a bearer token: signature, expiry, then its row (cached, invalidated across replicas): the salted
   * hash, the actor, revocation. A token that passed all of that before is recognised by its SHA-256: being byte for
   * byte the same token, it needs neither the signature nor the salted hash checked again (two HMACs and the
   * decoding cost several times the one-shot hash per request), only the expiry and its row's revocation, which are
   * checked on every use. Tokens accepted and refused, and the reasons given, are the same either way.
   */
  async verify(token: string): Promise<Actor> {
    const fingerprint = hash("sha256", token, "base64url");
    let claims = this.verified.get(fingerprint);
    let known: KnownToken | null | undefined = claims && this.cached(claims.jti);
    if (claims && known) {
      requireUnexpired(claims);
    } else {
      claims = this.claimsOf(token);
      requireUnexpired(claims);
      known = this.cached(claims.jti) ?? (await this.load(claims.jti));
      if (
        !known ||
        !digestMatches(tokenDigest(token, this.config.TOKEN_SALT), known.tokenHash) ||
        known.actorUrn !== claims.sub
      ) {
        throw unauthenticated("Unable to verify the provided token.");
      }
      if (this.verified.size >= TOKEN_CACHE_MAX_ENTRIES) this.verified.clear();
      this.verified.set(fingerprint, claims);
    }
    if (known.revoked) throw unauthenticated("Token has been revoked");
    this.lastUsed.record(claims.jti);
    return { urn: claims.sub, via: "token", tokenId: claims.jti };
  }

  private claimsOf(token: string): AccessTokenClaims {
    try {
      return this.jwt.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw unauthenticated("Unable to verify the provided token.");
      throw error;
    }
  }

  private cached(tokenId: string): KnownToken | undefined {
    // A revocation announced on a channel that is not delivering would go unseen: read the row instead.
    if (!this.bus.isLive()) return undefined;
    const cached = this.known.get(tokenId);
    return cached && Date.now() - cached.cachedAt < TOKEN_CACHE_MAX_AGE_MS ? cached : undefined;
  }

  private async load(tokenId: string): Promise<KnownToken | null> {
    if (!isUuid(tokenId)) return null;
    const generation = this.generation;
    const row = await this.prisma.accessToken.findUnique({
      where: { id: tokenId },
      select: { tokenHash: true, actorUrn: true, revokedAt: true },
    });
    if (!row) return null;
    const entry = {
      tokenHash: Buffer.from(row.tokenHash, "hex"),
      actorUrn: row.actorUrn,
      revoked: row.revokedAt !== null,
      cachedAt: Date.now(),
    };
    if (generation === this.generation) {
      if (this.known.size >= TOKEN_CACHE_MAX_ENTRIES) this.known.clear();
      this.known.set(tokenId, entry);
    }
    return entry;
  }

  /** `name`: a prepared statement of that name (for a statement whose text never changes). */
  private async run<Row extends pg.QueryResultRow>(statement: Prisma.Sql, name?: string): Promise<Row[]> {
    return (await this.pool.query<Row>({ name, text: statement.text, values: statement.values })).rows;
  }

  private async requireTokenApi(actor: Actor, operation: string): Promise<void> {
    await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", operation);
  }

  private urnOf(id: string): string {
    return makeUrn(this.config.URN_NAMESPACE, "accessToken", id);
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
    };
  }
}

/**
 * The create statement (exported for bench/tokens' floor), and the name it is prepared under: the token and its audit
 * row in one statement, so they commit together or not at all (the audit row is inserted from the token's RETURNING),
 * in one round trip. The interactive transaction this replaced took four round trips plus Prisma's transaction
 * bookkeeping, most of the mutation's cost. Always the same text: prepared once per connection, so PostgreSQL parses
 * and plans it once, not per token.
 */
export function createStatement(token: {
  id: string;
  type: CreateTokenInput["type"];
  metadata: Pick<TokenMetadata, "urn" | "name" | "description" | "actorUrn" | "ownerUrn">;
  tokenHash: string;
  /** epoch ms */
  createdAt: number;
  /** epoch seconds; undefined: never expires */
  exp: number | undefined;
  audit: { actorUrn: string; details: Record<string, unknown> };
}): { statement: Prisma.Sql; name: string } {
  const { metadata } = token;
  const statement = Prisma.sql`
    WITH token AS (
      INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at)
      VALUES (${token.id}::uuid, ${token.type}::"AccessTokenType", ${metadata.name}, ${metadata.description},
              ${metadata.actorUrn}, ${metadata.ownerUrn}, ${token.tokenHash},
              to_timestamp(${token.createdAt}::int8 / 1000.0), to_timestamp(${token.exp ?? null}::int8))
      RETURNING id
    )
    INSERT INTO audit_event (actor_urn, action, target_urn, details)
    SELECT ${token.audit.actorUrn}, 'accessToken.create', ${metadata.urn}, ${JSON.stringify(token.audit.details)}::jsonb
      FROM token`;
  return { statement, name: "access-token-create" };
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
}

/** A timestamptz(3) column as epoch ms: a double, which pg hands over as a number, exact for any ms timestamp. */
function epochMs(column: string): Prisma.Sql {
  return Prisma.raw(`round(date_part('epoch', ${column}) * 1000)`);
}

/** One filter as SQL: `=` for one value, so the (column, created_at) index also gives the order; ANY for several. */
function filterCondition(filter: ListFilter) {
  const column = Prisma.raw(filter.column);
  if (filter.column !== "id") {
    return filter.values.length === 1
      ? Prisma.sql`${column} = ${filter.values[0]}`
      : Prisma.sql`${column} = ANY(${filter.values}::text[])`;
  }
  const ids = filter.values.filter(isUuid);
  if (ids.length === 0) return Prisma.sql`FALSE`;
  return ids.length === 1 ? Prisma.sql`id = ${ids[0]}::uuid` : Prisma.sql`id = ANY(${ids}::uuid[])`;
}

type ListFilter = { column: (typeof FILTER_COLUMNS)[keyof typeof FILTER_COLUMNS]; values: string[] };

/**
 * The list statement (exported for bench/tokens' floor), and the name it is prepared under. Count and page in one
 * statement: one round trip and one snapshot, so `total` and `tokens` always agree (two statements, even in a
 * transaction, each see their own snapshot under READ COMMITTED). The count is split so each half is an index-only
 * range scan of access_token_*_expires_at_idx. The page is joined to the count so that an empty page still brings the
 * total (one row, page columns null); times come back as epoch ms.
 */
export function listStatement(
  filters: readonly ListFilter[],
  now: Date,
  start: number,
  count: number,
): { statement: Prisma.Sql; name: string | undefined } {
  const where = Prisma.join([Prisma.sql`revoked_at IS NULL`, ...filters.map(filterCondition)], " AND ");
  const statement = Prisma.sql`
    SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
           ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
           ${epochMs("p.last_used_at")} AS last_used_at
      FROM (SELECT ((SELECT count(*) FROM access_token WHERE ${where} AND expires_at IS NULL)
                    + (SELECT count(*) FROM access_token WHERE ${where} AND expires_at > ${now}::timestamptz))::int
                   AS total) AS c
      LEFT JOIN LATERAL (SELECT * FROM access_token
                          WHERE ${where} AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                          ORDER BY created_at DESC, id DESC
                          LIMIT ${count} OFFSET ${start}) AS p ON true
     ORDER BY p.created_at DESC, p.id DESC`;
  // Prepared per filter shape (the text depends on the fields filtered, not the values): planning this statement cost
  // PostgreSQL about as much as running it. Only for a few filters, so each connection keeps a bounded set.
  const name =
    filters.length <= MAX_PREPARED_FILTERS
      ? `access-token-list-${hash("sha1", statement.text, "hex").slice(0, 16)}`
      : undefined;
  return { statement, name };
}

function requireUnexpired(claims: AccessTokenClaims): void {
  if (claims.exp !== undefined && claims.exp * 1000 <= Date.now()) throw unauthenticated("Token has expired.");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (value: string) => UUID.test(value);
