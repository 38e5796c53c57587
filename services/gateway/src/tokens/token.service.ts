import { randomUUID } from "node:crypto";
import { badInput, forbidden, makeUrn, notFound, parseUrnField, unauthenticated, type Config } from "@mdp/core";
import { Prisma, type AccessToken, type PrismaClient } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { safeEqual } from "../auth/constant-time";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";
import { Hs256, JwtError } from "./jwt";
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

/** A safety net only: revocations reach every replica over pub/sub at once. */
const TOKEN_CACHE_MAX_AGE_MS = 30_000;
const TOKEN_CACHE_MAX_ENTRIES = 50_000;

/**
 * Personal access tokens (CONTRACT.md "Tokens"): HS256 JWTs of which only a salted hash is stored. Every operation
 * needs at least GENERATE_PERSONAL_ACCESS_TOKENS; acting on other users' tokens needs MANAGE_ACCESS_TOKENS.
 */
export class TokenService {
  private readonly jwt: Hs256;
  private readonly known = new Map<string, KnownToken>();
  /** bumped by every invalidation, so a lookup that raced with a revocation does not cache what it read */
  private generation = 0;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly policies: PolicyEngine,
    private readonly bus: InvalidationBus,
    private readonly lastUsed: LastUsedRecorder,
    private readonly config: Pick<
      Config,
      "TOKEN_SIGNING_KEY" | "TOKEN_SALT" | "URN_NAMESPACE" | "ACCESS_TOKEN_ALLOW_NO_EXPIRY"
    >,
  ) {
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
    }
    const name = input.name.trim();
    if (name.length < 1 || name.length > 256) throw badInput("input.name must be 1 to 256 characters long");
    if ((input.description?.length ?? 0) > 2000)
      throw badInput("input.description must be at most 2000 characters long");
    const seconds = DURATIONS[input.duration];
    if (seconds === null && !this.config.ACCESS_TOKEN_ALLOW_NO_EXPIRY) {
      throw badInput("input.duration NO_EXPIRY is not allowed on this server (ACCESS_TOKEN_ALLOW_NO_EXPIRY=false)");
    }

    const id = randomUUID();
    const now = new Date();
    // Second precision, so the stored expiry and the token's exp claim are the same instant.
    const issuedAt = Math.floor(now.getTime() / 1000);
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
      createdAt: issuedAt * 1000,
      expiresAt: exp === undefined ? null : exp * 1000,
      lastUsedAt: null,
    };
    const audit = { name, actorUrn: input.actorUrn, duration: input.duration, via: actor.via };
    // The token and its audit row in one statement: they commit together or not at all, in one round trip (an
    // interactive transaction takes four, plus Prisma's bookkeeping, which was most of this mutation's cost).
    await this.prisma.$executeRaw`
      WITH token AS (
        INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at)
        VALUES (${id}::uuid, ${input.type}::"AccessTokenType", ${name}, ${metadata.description}, ${metadata.actorUrn},
                ${metadata.ownerUrn}, ${hashToken(accessToken, this.config.TOKEN_SALT)},
                ${new Date(metadata.createdAt)}::timestamptz,
                ${metadata.expiresAt === null ? null : new Date(metadata.expiresAt)}::timestamptz)
        RETURNING id
      )
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT ${actor.urn}, 'accessToken.create', ${metadata.urn}, ${JSON.stringify(audit)}::jsonb FROM token`;
    return { accessToken, metadata };
  }

  async list(actor: Actor, input: ListTokensInput) {
    await this.requireTokenApi(actor, "list access tokens");
    const { start, count } = pageOf(input);
    const filters = (input.filters ?? []).map((f, i) => {
      const column = FILTER_COLUMNS[f.field as keyof typeof FILTER_COLUMNS];
      if (!column) {
        throw badInput(
          `input.filters[${i}].field '${f.field}' is not filterable; use one of ${Object.keys(FILTER_COLUMNS).join(", ")}`,
        );
      }
      const values = f.values ?? (f.value != null ? [f.value] : []);
      if (values.length === 0) throw badInput(`input.filters[${i}] needs a value or values`);
      return { column, values };
    });
    if (!(await this.policies.has(actor, "MANAGE_ACCESS_TOKENS"))) {
      const ownOnly = filters.some(
        (f) =>
          (f.column === "actorUrn" || f.column === "ownerUrn") && f.values.length === 1 && f.values[0] === actor.urn,
      );
      if (!ownOnly) {
        throw forbidden(
          `${actor.urn} is unauthorized to list access tokens of other users: filter on actorUrn or ownerUrn equal to your own urn, or hold MANAGE_ACCESS_TOKENS.`,
        );
      }
    }
    const now = new Date();
    const where = Prisma.join([Prisma.sql`revoked_at IS NULL`, ...filters.map(filterCondition)], " AND ");
    // Count and page in one statement: one round trip and one snapshot, so `total` and `tokens` always agree (two
    // statements, even in a transaction, each see their own snapshot under READ COMMITTED). The count is split so
    // each half is an index-only range scan of access_token_*_expires_at_idx; the page comes back as one JSON value
    // (epoch ms already), which costs far less to decode than a row per token.
    const [result] = await this.prisma.$queryRaw<Array<{ total: number; page: string }>>`
      SELECT
        ((SELECT count(*) FROM access_token WHERE ${where} AND expires_at IS NULL)
          + (SELECT count(*) FROM access_token WHERE ${where} AND expires_at > ${now}::timestamptz))::int AS total,
        (SELECT coalesce(json_agg(json_build_array(
                  id, name, description, actor_urn, owner_urn, ${epochMs("created_at")}, ${epochMs("expires_at")},
                  ${epochMs("last_used_at")}) ORDER BY created_at DESC, id DESC), '[]')::text
           FROM (SELECT * FROM access_token
                  WHERE ${where} AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                  ORDER BY created_at DESC, id DESC
                  LIMIT ${count} OFFSET ${start}) AS page) AS page`;
    const tokens = (JSON.parse(result!.page) as PageRow[]).map((row) => this.metadataOfPageRow(row));
    return { start, count: tokens.length, total: result!.total, tokens };
  }

  async revoke(actor: Actor, tokenId: string): Promise<boolean> {
    await this.requireTokenApi(actor, "revoke access tokens");
    const token = isUuid(tokenId) ? await this.prisma.accessToken.findUnique({ where: { id: tokenId } }) : null;
    if (!token) throw notFound(`Access token ${tokenId} does not exist`);
    if (token.ownerUrn !== actor.urn && token.actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "revoke access tokens of other users");
    }
    if (token.revokedAt === null) {
      await this.prisma.$transaction(async (tx) => {
        await tx.accessToken.update({ where: { id: tokenId }, data: { revokedAt: new Date(), revokedBy: actor.urn } });
        await recordAudit(tx, actor, "accessToken.revoke", this.urnOf(tokenId), { actorUrn: token.actorUrn });
      });
    }
    this.known.delete(tokenId);
    await this.bus.publish({ kind: "token-revoked", tokenId });
    return true;
  }

  async metadataFor(actor: Actor, token: string): Promise<TokenMetadata> {
    await this.requireTokenApi(actor, "read access token metadata");
    const claims = this.claimsOf(token);
    const row = await this.prisma.accessToken.findUnique({ where: { id: claims.jti } });
    if (!row || !safeEqual(row.tokenHash, hashToken(token, this.config.TOKEN_SALT))) {
      throw notFound("Access token does not exist");
    }
    if (row.actorUrn !== actor.urn) {
      await this.policies.require(actor, "MANAGE_ACCESS_TOKENS", "read the metadata of other users' access tokens");
    }
    return this.metadataOf(row);
  }

  /** Authenticates a bearer token: signature, expiry, then revocation (cached, invalidated across replicas). */
  async verify(token: string): Promise<Actor> {
    const claims = this.claimsOf(token);
    if (claims.exp !== undefined && claims.exp * 1000 <= Date.now()) throw unauthenticated("Token has expired.");
    const known = this.cached(claims.jti) ?? (await this.load(claims.jti));
    if (
      !known ||
      !digestMatches(tokenDigest(token, this.config.TOKEN_SALT), known.tokenHash) ||
      known.actorUrn !== claims.sub
    ) {
      throw unauthenticated("Unable to verify the provided token.");
    }
    if (known.revoked) throw unauthenticated("Token has been revoked");
    this.lastUsed.record(claims.jti);
    return { urn: claims.sub, via: "token", tokenId: claims.jti };
  }

  private claimsOf(token: string) {
    try {
      return this.jwt.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw unauthenticated("Unable to verify the provided token.");
      throw error;
    }
  }

  private cached(tokenId: string): KnownToken | undefined {
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

  private async requireTokenApi(actor: Actor, operation: string): Promise<void> {
    await this.policies.require(actor, "GENERATE_PERSONAL_ACCESS_TOKENS", operation);
  }

  private urnOf(id: string): string {
    return makeUrn(this.config.URN_NAMESPACE, "accessToken", id);
  }

  private metadataOfPageRow([id, name, description, actorUrn, ownerUrn, createdAt, expiresAt, lastUsedAt]: PageRow) {
    return { urn: this.urnOf(id), id, name, description, actorUrn, ownerUrn, createdAt, expiresAt, lastUsedAt };
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

/** A listed token as the list statement returns it (times in epoch ms). */
type PageRow = [string, string, string | null, string, string, number, number | null, number | null];

function epochMs(column: string): Prisma.Sql {
  return Prisma.raw(`(extract(epoch FROM ${column}) * 1000)::int8`);
}

/** One filter as SQL: `=` for one value, so the (column, created_at) index also gives the order; ANY for several. */
function filterCondition(filter: { column: (typeof FILTER_COLUMNS)[keyof typeof FILTER_COLUMNS]; values: string[] }) {
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (value: string) => UUID.test(value);
