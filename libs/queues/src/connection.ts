import { Redis, type RedisOptions } from "ioredis";

/**
 * The longest a producer connection's command waits for Redis's answer ("Command timed out", which the outage
 * classifier calls Redis unavailable): the request paths' other Redis calls (a job looked up to cancel it, a job's
 * state, a rate limit, an invalidation published) then end too while a stalled Redis holds them, not when it resumes.
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 2_000;

/**
 * Workers block on Redis and must never give up a command (BullMQ requires maxRetriesPerRequest: null);
 * producers should fail fast so an HTTP request gets an error instead of hanging while Redis is away: no offline
 * queue while it is disconnected, and no command waits longer than PRODUCER_COMMAND_TIMEOUT_MS while it stalls.
 */
export function createRedis(url: string, role: "worker" | "producer" | "subscriber"): Redis {
  const options: RedisOptions =
    role === "producer"
      ? {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 5_000,
          commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
        }
      : { maxRetriesPerRequest: null, connectTimeout: 5_000 };
  return new Redis(url, { ...options, connectionName: `mdp-${role}`, lazyConnect: false });
}

/** Resolves once the connection is ready; producers fail fast while it is not, so start-up waits for it. */
export function whenReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off("ready", onReady);
      reject(new Error(`Redis did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once("ready", onReady);
  });
}

/** QUIT when connected (pending replies arrive first); otherwise drop the socket: QUIT would wait for a reconnect. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === "ready") {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    redis.disconnect();
  }
}
