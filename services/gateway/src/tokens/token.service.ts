import { randomUUID } from "node:crypto";
import { badInput, forbidden, makeUrn, notFound, parseUrnField, unauthenticated, type Config } from "@mdp/core";
import type { AccessToken, Prisma, PrismaClient } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { safeEqual } from "../auth/constant-time";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";
import { Hs256, JwtError } from "./jwt";
import type { LastUsedRecorder } from "./last-used.recorder";
import { hashToken } from "./token-hash";

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
const FILTER_COLUMNS = { actorUrn: "actorUrn", ownerUrn: "ownerUrn", name: "name", id: "id" } as const;

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
  tokenHash: string;
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
    const row = await this.prisma.$transaction(async (tx) => {
      const created = await tx.accessToken.create({
        data: {
          id,
          type: input.type,
          name,
          description: input.description ?? null,
          actorUrn: input.actorUrn,
          ownerUrn: actor.urn,
          tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
          createdAt: new Date(issuedAt * 1000),
          expiresAt: exp === undefined ? null : new Date(exp * 1000),
        },
      });
      await recordAudit(tx, actor, "accessToken.create", this.urnOf(id), {
        name,
        actorUrn: input.actorUrn,
        duration: input.duration,
      });
      return created;
    });
    return { accessToken, metadata: this.metadataOf(row) };
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
    const where: Prisma.AccessTokenWhereInput = {
      revokedAt: null,
      OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }],
      AND: filters.map((f) =>
        f.column === "id" ? { id: { in: f.values.filter(isUuid) } } : { [f.column]: { in: f.values } },
      ),
    };
    const [total, rows] = await this.prisma.$transaction([
      this.prisma.accessToken.count({ where }),
      this.prisma.accessToken.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: start,
        take: count,
      }),
    ]);
    return { start, count: rows.length, total, tokens: rows.map((r) => this.metadataOf(r)) };
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
    const known = await this.lookUp(claims.jti);
    if (
      !known ||
      !safeEqual(known.tokenHash, hashToken(token, this.config.TOKEN_SALT)) ||
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

  private async lookUp(tokenId: string): Promise<KnownToken | null> {
    const cached = this.known.get(tokenId);
    if (cached && Date.now() - cached.cachedAt < TOKEN_CACHE_MAX_AGE_MS) return cached;
    if (!isUuid(tokenId)) return null;
    const generation = this.generation;
    const row = await this.prisma.accessToken.findUnique({
      where: { id: tokenId },
      select: { tokenHash: true, actorUrn: true, revokedAt: true },
    });
    if (!row) return null;
    const entry = {
      tokenHash: row.tokenHash,
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (value: string) => UUID.test(value);
