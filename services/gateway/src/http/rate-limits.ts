import { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { AppError, type Config, type Logger } from "@mdp/core";
import type { Actor } from "../auth/actor";

/** Each limit: what it counts, and the setting that sizes it (per actor per minute; 0 = off). */
const LIMITS = {
  tokenMints: { what: "access token creations", setting: "RATE_LIMIT_TOKEN_MINTS_PER_MINUTE" },
  evaluations: { what: "metadata-test entity evaluations", setting: "RATE_LIMIT_EVALUATIONS_PER_MINUTE" },
  testRuns: { what: "metadata-test runs", setting: "RATE_LIMIT_TEST_RUNS_PER_MINUTE" },
} as const;

export type RateLimitName = keyof typeof LIMITS;
type LimitSettings = (typeof LIMITS)[RateLimitName]["setting"];

/** The longest a limit check waits on Redis before the in-memory insurance limiter decides instead. */
const REDIS_TIMEOUT_MS = 200;

/**
 * Per-actor rate limits shared by every replica: rate-limiter-flexible's RateLimiterRedis (one atomic Lua script per
 * check, a fixed one-minute window per actor), on a Redis connection of its own that never queues while Redis is
 * away. When Redis fails or is slower than REDIS_TIMEOUT_MS, an in-memory limiter of limit ÷ RATE_LIMIT_REPLICAS
 * decides for this replica alone, so an outage neither stops callers nor lifts the limit. The system client (the
 * trusted front end acting for its users) is not limited: it would be one actor for many people.
 */
export class RateLimits {
  private readonly limiters = new Map<RateLimitName, { limiter: RateLimiterRedis; points: number }>();

  constructor(
    private readonly redis: Redis,
    config: Pick<Config, "QUEUE_PREFIX" | "RATE_LIMIT_REPLICAS" | LimitSettings>,
  ) {
    for (const [name, { setting }] of Object.entries(LIMITS) as Array<
      [RateLimitName, (typeof LIMITS)[RateLimitName]]
    >) {
      const points = config[setting];
      if (points === 0) continue;
      const keyPrefix = `${config.QUEUE_PREFIX}:rate-limit:${name}`;
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
      this.limiters.set(name, { limiter, points });
    }
  }

  /** Redis connection options for the limiters: fail fast, never hold a request while Redis is away or stalled. */
  static connect(config: Pick<Config, "REDIS_URL">, logger: Logger): Redis {
    const redis = new Redis(config.REDIS_URL, {
      enableOfflineQueue: false,
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
  async consume(actor: Actor, name: RateLimitName, cost = 1): Promise<void> {
    if (actor.via === "system") return;
    const entry = this.limiters.get(name);
    if (!entry) return;
    try {
      await entry.limiter.consume(actor.urn, Math.min(Math.max(1, cost), entry.points));
    } catch (rejection) {
      // An Error would mean both the store and the insurance failed: nothing to hold the caller to.
      if (!(rejection instanceof RateLimiterRes)) return;
      const retryAfterSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      const { what, setting } = LIMITS[name];
      throw new AppError(
        "TOO_MANY_REQUESTS",
        `Rate limit exceeded: at most ${entry.points} ${what} per minute per actor (${setting}); retry in ${retryAfterSeconds} s.`,
        { limit: setting, perMinute: entry.points, retryAfterSeconds },
      );
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === "ready") await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }
}
