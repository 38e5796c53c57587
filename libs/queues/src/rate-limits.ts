import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { AppError, perTurn, SYSTEM_ACTOR_URN, type Config, type Logger } from "@mdp/core";
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
    { limiter: RateLimiterRedis; points: number; insurancePoints: number; perMinute: number }
  >();

  /** this turn's checks, sent at its end: one batch per kind, limit and actor (see `coalesced`) */
  private readonly turn = perTurn(
    async (checks: TurnCheck[]) => {
      const sum = checks.reduce((total, check) => total + check.points, 0);
      // The first check's send speaks for them all: the batch's checks share kind, limit and actor.
      const res = await checks[0]!.send(sum);
      let before = 0;
      return checks.map((check) => {
        const decided = { res, sum, before };
        before += check.points;
        return decided;
      });
    },
    (check) => `${check.kind}\u0000${check.name}\u0000${check.urn}`,
  );

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
      const insurancePoints = Math.max(1, Math.floor(points / config.RATE_LIMIT_REPLICAS));
      const limiter = new RateLimiterRedis({
        storeClient: redis,
        rejectIfRedisNotReady: true,
        points,
        duration: 60,
        keyPrefix,
        // Once an actor is over, its further requests are refused here until the window ends, without Redis.
        inMemoryBlockOnConsumed: points + 1,
        insuranceLimiter: new InsuranceLimiter({ points: insurancePoints, duration: 60, keyPrefix }),
      });
      this.limiters.set(name, { limiter, points, insurancePoints, perMinute });
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
    const points = Math.min(Math.max(1, cost), entry.points);
    // Consumed one after another, the n-th of this turn's checks would see the count before the turn plus the points
    // of the first n, and be refused past the limit (the limiter counts refused points too): one consume of their
    // sum tells each exactly that.
    const { res, sum, before } = await this.coalesced("consume", name, actor.urn, points, (total) =>
      entry.limiter.consume(actor.urn, total).then(
        (ok) => ({ ...answer(ok), refused: false }),
        (rejection: unknown) =>
          // An Error: both the store and the insurance failed, nothing to hold the caller to.
          rejection instanceof RateLimiterRes ? { ...answer(rejection), refused: true } : null,
      ),
    );
    if (!res?.refused) return;
    const limit = res.insured ? entry.insurancePoints : entry.points;
    const count = res.consumedPoints - sum + before + points;
    // A count within the limit on a refusal: the actor is blocked in memory until its window ends (nothing counted).
    if (count > limit || res.consumedPoints <= limit) throw this.exceeded(name, res.msBeforeNext);
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
    // The checks of one turn read the count once: they are concurrent, and nothing is charged in between.
    const { res } = await this.coalesced(
      "get",
      name,
      actor.urn,
      0,
      () =>
        entry.limiter.get(actor.urn).then(
          (spent) => spent && { ...answer(spent), refused: false },
          () => null,
        ), // both stores failed: nothing to hold to
    );
    if (res && res.consumedPoints >= entry.points) throw this.exceeded(name, res.msBeforeNext);
  }

  /** Adds `cost` (in the limit's points: ms for evaluationTime) to the actor's count; never refuses, never throws. */
  async charge(actor: RateLimited, name: RateLimitName, cost: number): Promise<void> {
    if (exempt(actor) || !(cost > 0)) return;
    const entry = this.limiters.get(name);
    if (!entry) return;
    await this.coalesced("charge", name, actor.urn, Math.ceil(cost), (total) =>
      entry.limiter.penalty(actor.urn, total).then(
        () => null,
        () => null,
      ),
    );
  }

  /**
   * One Redis round trip for every check of the same kind, limit and actor made in one turn of the event loop (sent
   * at its end by @mdp/core's perTurn, as the gateway batches evaluate requests): under load an actor's concurrent
   * requests cost one script call between them instead of one each, and a lone request waits for nothing but the end
   * of its turn. Each decision is still Redis's, atomic and shared by every replica: nothing is counted locally, so
   * batching adds no error across replicas. Each caller gets the answer for the whole batch (`sum` of its points),
   * and the points of the callers queued before it (`before`).
   */
  private coalesced(
    kind: TurnCheck["kind"],
    name: RateLimitName,
    urn: string,
    points: number,
    send: (sum: number) => Promise<BatchAnswer | null>,
  ): Promise<{ res: BatchAnswer | null; sum: number; before: number }> {
    return this.turn({ kind, name, urn, points, send });
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

/** What a limiter answered a batch: whether it refused, the count after it, and whether the insurance answered. */
interface BatchAnswer {
  consumedPoints: number;
  msBeforeNext: number;
  refused: boolean;
  insured: boolean;
}

/** One check waiting for the end of the turn (RateLimits.coalesced). */
interface TurnCheck {
  kind: "consume" | "get" | "charge";
  name: RateLimitName;
  urn: string;
  points: number;
  send: (sum: number) => Promise<BatchAnswer | null>;
}

/** The answers the in-memory insurance limiter gave (rate-limiter-flexible passes them through unchanged). */
const insured = new WeakSet<RateLimiterRes>();

function answer(res: RateLimiterRes): Omit<BatchAnswer, "refused"> {
  return { consumedPoints: res.consumedPoints, msBeforeNext: res.msBeforeNext, insured: insured.has(res) };
}

/** RateLimiterMemory whose answers are marked as the insurance's: its limit is the replica's share, not the whole. */
class InsuranceLimiter extends RateLimiterMemory {
  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    const mark = (res: unknown) => {
      if (res instanceof RateLimiterRes) insured.add(res);
      return res;
    };
    return super.consume(key, points, options).then(
      (res) => mark(res) as RateLimiterRes,
      (rejection: unknown) => {
        throw mark(rejection);
      },
    );
  }
}

/**
 * Not limited: a request the system client made (however it named its actor), and deferred work (no `via`) the system
 * actor owns, which the system client set. A request that merely names the system actor's urn (an access token acting
 * for it, a development `X-Platform-Actor` header) is limited like any other.
 */
const exempt = (actor: RateLimited) =>
  actor.via === "system" || (actor.via === undefined && actor.urn === SYSTEM_ACTOR_URN);
