import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { AppError, SYSTEM_ACTOR_URN, type Config, type Logger } from "@mdp/core";
import { createRedis, type RedisConnection } from "./connection";

/**
 * Each limit: what it counts, and the setting that sizes it (per actor per minute; 0 = off). `scale`: points per unit
 * of the setting (evaluation time is counted in ms, set in seconds). One definition for every process: the gateway
 * counts requests, the workers count the schedule firings they start for a schedule's owner, on the same keys.
 */
export const RATE_LIMITS = {
  tokenMints: { what: "access token creations", setting: "RATE_LIMIT_TOKEN_MINTS_PER_MINUTE", scale: 1 },
  evaluations: { what: "metadata-test entity evaluations", setting: "RATE_LIMIT_EVALUATIONS_PER_MINUTE", scale: 1 },
  testRuns: { what: "metadata-test runs", setting: "RATE_LIMIT_TEST_RUNS_PER_MINUTE", scale: 1 },
  evaluationTime: {
    what: "seconds of metadata-test evaluation time",
    setting: "RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE",
    scale: 1000,
  },
} as const;

export type RateLimitName = keyof typeof RATE_LIMITS;
type LimitSettings = (typeof RATE_LIMITS)[RateLimitName]["setting"];

/**
 * Whom a limit counts: a user urn. `via` is how a request's caller authenticated (the gateway's Actor): `"system"` is
 * the trusted system client, the front end acting for its users (or, naming no user, as the system actor), which is
 * not limited (it would be one actor for many people); any other caller is limited by its urn, whatever that urn is,
 * so a token acting for the system actor is limited like anyone's. Deferred work (a schedule's firing) has no `via`
 * and counts for its owner, as the owner's own requests do: the system actor's own schedules, which only the system
 * client sets, are not limited, as the system client is not.
 */
export interface RateLimited {
  urn: string;
  via?: string;
}

/** The longest a limit check waits on Redis before the in-memory insurance limiter decides instead. */
const REDIS_TIMEOUT_MS = 200;

/**
 * The keys of one limit: the deployment's prefix without its hash tag's braces. Each check touches one key, so on a
 * Redis Cluster nothing requires these to share a slot; untagged, the actors' counters spread over every master
 * instead of loading the one that holds the queues (docs/redis.md, docs/capacity.md).
 */
export function rateLimitKeyPrefix(queuePrefix: string, name: string): string {
  return `${queuePrefix.replace(/[{}]/g, "")}:rate-limit:${name}`;
}

/**
 * Per-actor rate limits shared by every replica: rate-limiter-flexible's RateLimiterRedis (one atomic Lua script per
 * check, a fixed one-minute window per actor), on a Redis connection of its own that never queues while Redis is
 * away. When Redis fails or is slower than REDIS_TIMEOUT_MS, an in-memory limiter of limit ÷ RATE_LIMIT_REPLICAS
 * decides for this process alone, so an outage neither stops callers nor lifts the limit. Only the system client (the
 * trusted front end acting for its users, authenticated as such) is not limited: it would be one actor for many
 * people. Its urn alone exempts nothing (see `exempt`).
 */
export class RateLimits {
  private readonly limiters = new Map<
    RateLimitName,
    { limiter: RateLimiterRedis; points: number; perMinute: number }
  >();

  constructor(
    private readonly redis: RedisConnection,
    config: Pick<Config, "QUEUE_PREFIX" | "RATE_LIMIT_REPLICAS" | LimitSettings>,
  ) {
    for (const [name, { setting }] of Object.entries(RATE_LIMITS) as Array<
      [RateLimitName, (typeof RATE_LIMITS)[RateLimitName]]
    >) {
      const perMinute = config[setting];
      if (perMinute === 0) continue;
      const points = perMinute * RATE_LIMITS[name].scale;
      const keyPrefix = rateLimitKeyPrefix(config.QUEUE_PREFIX, name);
      const limiter = new RateLimiterRedis({
        storeClient: redis,
        rejectIfRedisNotReady: true,
        points,
        duration: 60,
        keyPrefix,
        // Once an actor is over, its further requests are refused here until the window ends, without Redis.
        inMemoryBlockOnConsumed: points + 1,
        insuranceLimiter: new RateLimiterMemory({
          points: Math.max(1, Math.floor(points / config.RATE_LIMIT_REPLICAS)),
          duration: 60,
          keyPrefix,
        }),
      });
      this.limiters.set(name, { limiter, points, perMinute });
    }
  }

  /** Redis connection options for the limiters: fail fast, never hold a request while Redis is away or stalled. */
  static connect(config: Pick<Config, "REDIS_URL">, logger: Logger): RedisConnection {
    // A producer's connection (no offline queue), with the limiters' tighter bounds.
    const redis = createRedis(config.REDIS_URL, "producer", {
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_TIMEOUT_MS,
      connectionName: "mdp-rate-limits",
    });
    // Errors reach the limiter (and its insurance) per command; the connection's own are only worth a line.
    redis.on("error", (error: Error) => logger.debug({ err: error }, "rate-limit Redis connection"));
    return redis;
  }

  /**
   * Counts `cost` against the actor's limit; throws TOO_MANY_REQUESTS (with retryAfterSeconds) when it is spent. A
   * cost above the whole limit counts as the whole limit, so such a request still passes once per window.
   */
  async consume(actor: RateLimited, name: RateLimitName, cost = 1): Promise<void> {
    if (exempt(actor)) return;
    const entry = this.limiters.get(name);
    if (!entry) return;
    try {
      await entry.limiter.consume(actor.urn, Math.min(Math.max(1, cost), entry.points));
    } catch (rejection) {
      // An Error would mean both the store and the insurance failed: nothing to hold the caller to.
      if (!(rejection instanceof RateLimiterRes)) return;
      throw this.exceeded(name, rejection.msBeforeNext);
    }
  }

  /**
   * For a limit charged after the work (evaluationTime): throws TOO_MANY_REQUESTS when the actor has already spent
   * the minute's budget, without counting anything. The work itself is charged with `charge` once its cost is known,
   * so an actor's last admitted request may take it past the limit; the next one is refused.
   */
  async refuseIfSpent(actor: RateLimited, name: RateLimitName): Promise<void> {
    if (exempt(actor)) return;
    const entry = this.limiters.get(name);
    if (!entry) return;
    const spent = await entry.limiter.get(actor.urn).catch(() => null); // both stores failed: nothing to hold to
    if (spent && spent.consumedPoints >= entry.points) throw this.exceeded(name, spent.msBeforeNext);
  }

  /** Adds `cost` (in the limit's points: ms for evaluationTime) to the actor's count; never refuses, never throws. */
  async charge(actor: RateLimited, name: RateLimitName, cost: number): Promise<void> {
    if (exempt(actor) || !(cost > 0)) return;
    const entry = this.limiters.get(name);
    if (!entry) return;
    await entry.limiter.penalty(actor.urn, Math.ceil(cost)).catch(() => undefined);
  }

  private exceeded(name: RateLimitName, msBeforeNext: number): AppError {
    const entry = this.limiters.get(name)!;
    const retryAfterSeconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
    const { what, setting } = RATE_LIMITS[name];
    return new AppError(
      "TOO_MANY_REQUESTS",
      `Rate limit exceeded: at most ${entry.perMinute} ${what} per minute per actor (${setting}); retry in ${retryAfterSeconds} s.`,
      { limit: setting, perMinute: entry.perMinute, retryAfterSeconds },
    );
  }

  async close(): Promise<void> {
    if (this.redis.status === "ready") await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }
}

/**
 * Not limited: a request the system client made (however it named its actor), and deferred work (no `via`) the system
 * actor owns, which the system client set. A request that merely names the system actor's urn (an access token acting
 * for it, a development `X-Platform-Actor` header) is limited like any other.
 */
const exempt = (actor: RateLimited) =>
  actor.via === "system" || (actor.via === undefined && actor.urn === SYSTEM_ACTOR_URN);
