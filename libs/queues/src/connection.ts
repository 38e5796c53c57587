import { Redis, type RedisOptions } from "ioredis";

/**
 * Workers block on Redis and must never give up a command (BullMQ requires maxRetriesPerRequest: null);
 * producers should fail fast so an HTTP request gets an error instead of hanging while Redis is away.
 */
export function createRedis(url: string, role: "worker" | "producer" | "subscriber"): Redis {
  const options: RedisOptions =
    role === "producer"
      ? { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5_000 }
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
