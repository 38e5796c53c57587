import { perTurn, pruneInBatches, SYSTEM_ACTOR_URN, type Config, type Logger, type RunSummary } from "@mdp/core";
import {
  accessTokenUsageOf,
  inPrismaTransaction,
  pruneAccessTokenUsage,
  revokeIdleAccessTokens,
  type AccessTokenUsageRow,
  type PrismaClient,
} from "@mdp/db";
import type { Chore } from "@mdp/queues";
import type { TokenStore } from "../tokens/token.store";
import type { TokenVerifier } from "../tokens/token.verifier";
import type { TokenUsageRecorder } from "./token-usage.recorder";
import { stopWorkSetThrough } from "../tokens/revoked-token-work";

/** How often the gateways' chores run (each firing once in the cluster). */
export const TOKEN_CHORES_EVERY_MS = 3_600_000;

/** A token's usage as GraphQL's AccessTokenUsage answers it. */
export interface TokenUsage extends AccessTokenUsageRow {
  /** requests in the last USAGE_DAYS days, all operations */
  total: number;
}

export interface TokenUsageServiceDeps {
  prisma: PrismaClient;
  /** the one recorder of tokens' uses (lastUsedAt too: composition hands it to the verifier) */
  recorder: TokenUsageRecorder;
  store: Pick<TokenStore, "urnOf">;
  verifier: Pick<TokenVerifier, "revokedAllOf">;
  config: Pick<Config, "ACCESS_TOKEN_IDLE_REVOKE_DAYS" | "ACCESS_TOKEN_USAGE_RECORDING" | "URN_NAMESPACE">;
  logger: Logger;
}

/**
 * What each token is used for (docs/api.md "What a token is used for"): its recorder (fed after each request made with
 * a token), reading it back for a page of tokens in one round trip, and the gateways' chores: dropping counts past
 * their days, and, with ACCESS_TOKEN_IDLE_REVOKE_DAYS, revoking idle tokens.
 */
export class TokenUsageService {
  /** ACCESS_TOKEN_USAGE_RECORDING: whether requests made with tokens are recorded (app.ts mounts recordTokenUse) */
  readonly recording: boolean;

  private readonly prisma: PrismaClient;
  readonly recorder: TokenUsageRecorder;
  private readonly store: TokenUsageServiceDeps["store"];
  private readonly verifier: TokenUsageServiceDeps["verifier"];
  private readonly config: TokenUsageServiceDeps["config"];
  private readonly logger: Logger;

  constructor(deps: TokenUsageServiceDeps) {
    this.prisma = deps.prisma;
    this.recorder = deps.recorder;
    this.store = deps.store;
    this.verifier = deps.verifier;
    this.config = deps.config;
    this.logger = deps.logger;
    this.recording = deps.config.ACCESS_TOKEN_USAGE_RECORDING;
  }

  /**
   * A loader per request (keyed by its context): the usage of every token a list resolves is read in one batch
   * (`perTurn`: graphql-js resolves a list's items in one pass), not a query per token.
   */
  loaderFor(context: object): (tokenId: string) => Promise<TokenUsage> {
    let loader = loaders.get(context);
    if (!loader) {
      loader = perTurn((tokenIds: string[]) => this.usageOf(tokenIds));
      loaders.set(context, loader);
    }
    return loader;
  }

  /** The usage of each token of `tokenIds`, in their order (a token named twice is read once). */
  private async usageOf(tokenIds: string[]): Promise<TokenUsage[]> {
    const usage = await accessTokenUsageOf(this.prisma, [...new Set(tokenIds)]);
    return tokenIds.map((id) => {
      const row = usage.get(id) ?? { clients: [], operations: [] };
      return { ...row, total: row.operations.reduce((sum, o) => sum + o.count, 0) };
    });
  }

  /** The gateways' chores (run by one gateway per firing, libs/queues/src/chores.ts). */
  chores(): Array<Chore<"gatewayChores">> {
    const idleRevoke = this.config.ACCESS_TOKEN_IDLE_REVOKE_DAYS !== undefined;
    return [
      { name: "prune-token-usage", everyMs: TOKEN_CHORES_EVERY_MS, run: () => this.prune() },
      // Scheduled only where the setting is; every gateway can run a firing (one without the setting does nothing),
      // so replicas configured apart never fail each other's jobs.
      {
        name: "revoke-idle-tokens",
        ...(idleRevoke && { everyMs: TOKEN_CHORES_EVERY_MS }),
        run: () => this.revokeIdle(),
      },
    ];
  }

  /** Counts past their days, a batch per statement until caught up or the budget is spent (the rest: next firing). */
  async prune(budgetMs = 20_000): Promise<RunSummary> {
    return {
      deleted: await pruneInBatches((batch) => pruneAccessTokenUsage(this.prisma, batch), { budgetMs, batch: 10_000 }),
    };
  }

  /**
   * Revokes every live token idle for ACCESS_TOKEN_IDLE_REVOKE_DAYS (by the system actor, audited per token, reason
   * `idle`), stopping the work set through them in the same transaction, as every revocation does; then tells every
   * replica, one message per user whose tokens went. Uses not flushed yet (seconds) are not seen: a day is the unit
   * here.
   */
  async revokeIdle(): Promise<RunSummary> {
    const days = this.config.ACCESS_TOKEN_IDLE_REVOKE_DAYS;
    if (days === undefined) return { revoked: 0 };
    const revoked = await inPrismaTransaction(this.prisma, async (tx) => {
      const idle = await revokeIdleAccessTokens(tx, days, SYSTEM_ACTOR_URN, (id) => this.store.urnOf(id), {
        via: "idle-revoke",
      });
      await stopWorkSetThrough(
        tx,
        idle.map((t) => t.id),
        this.config.URN_NAMESPACE,
        {
          by: SYSTEM_ACTOR_URN,
          cause: `idle access tokens revoked after ${days} days unused (ACCESS_TOKEN_IDLE_REVOKE_DAYS)`,
          trigger: "idle",
          via: "idle-revoke",
        },
      );
      return idle;
    });
    for (const actorUrn of new Set(revoked.map((t) => t.actorUrn))) await this.verifier.revokedAllOf(actorUrn);
    if (revoked.length > 0) this.logger.info({ revoked: revoked.length, days }, "revoked idle access tokens");
    return { revoked: revoked.length };
  }
}

const loaders = new WeakMap<object, (tokenId: string) => Promise<TokenUsage>>();
