import type { EventEmitter } from "node:events";
import { Cluster, Redis, type RedisOptions } from "ioredis";
// Not re-exported by ioredis's index; its `Connector` option (public) takes a subclass of it.
import StandaloneConnector, { type StandaloneConnectionOptions } from "ioredis/built/connectors/StandaloneConnector";
import { parseRedisUrl, withTimeout } from "@mdp/core";

/**
 * A connection to REDIS_URL: one server, or a Redis Cluster (`redis-cluster://h1:p1,h2:p2`, see @mdp/core's
 * redis-url.ts), which routes each command to the node holding its key's slot. Both take the same commands,
 * BullMQ and rate-limiter-flexible accept both, and pub/sub reaches every subscriber of the cluster.
 */
export type RedisConnection = Redis | Cluster;

/**
 * The longest a producer connection's command waits for Redis's answer ("Command timed out", which the outage
 * classifier calls Redis unavailable): the request paths' other Redis calls (a job looked up to cancel it, a job's
 * state, a rate limit, an invalidation published) then end too while a stalled Redis holds them, not when it resumes.
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 2_000;

/**
 * ioredis's connector, but disconnecting a connection whose socket has already closed arms nothing. ioredis ends the
 * socket and arms a timer (2 s, disconnectTimeout) to destroy it should its close not come; a connection that is
 * reconnecting keeps its closed socket, whose close never comes again, so the timer ran its 2 s after close had
 * returned and the process could not exit on its own until then (jest force-exited its worker). Options carry it to
 * the connections copied from one (duplicate(): BullMQ's blocking and worker connections) and to a cluster's nodes.
 */
export class ClosedSocketAwareConnector extends StandaloneConnector {
  constructor(options: unknown) {
    super(options as StandaloneConnectionOptions); // ioredis's ConnectorConstructor takes `unknown`
  }

  override disconnect(): void {
    if (this.stream?.destroyed) {
      this.connecting = false;
      return;
    }
    super.disconnect();
  }
}

/**
 * Workers block on Redis and must never give up a command (BullMQ requires maxRetriesPerRequest: null);
 * producers should fail fast so an HTTP request gets an error instead of hanging while Redis is away: no offline
 * queue while it is disconnected, and no command waits longer than PRODUCER_COMMAND_TIMEOUT_MS while it stalls.
 */
export function createRedis(
  url: string,
  role: "worker" | "producer" | "subscriber",
  /** a caller's own bounds instead of the role's (the rate limits: 200 ms, no retry) */
  overrides: Pick<RedisOptions, "maxRetriesPerRequest" | "commandTimeout" | "connectionName"> = {},
): RedisConnection {
  const options: RedisOptions = {
    ...(role === "producer"
      ? {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 5_000,
          commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
        }
      : { maxRetriesPerRequest: null, connectTimeout: 5_000 }),
    connectionName: `mdp-${role}`,
    Connector: ClosedSocketAwareConnector,
    ...overrides,
  };
  const target = parseRedisUrl(url);
  if (!target.cluster) return new Redis(url, { ...options, lazyConnect: false });
  const { enableOfflineQueue, ...nodeOptions } = options;
  const cluster = new Cluster(target.nodes, {
    // Per node: each node's connection carries the role's bounds (BullMQ reads maxRetriesPerRequest here).
    redisOptions: {
      ...nodeOptions,
      username: target.username,
      password: target.password,
      tls: target.tls ? {} : undefined,
    },
    // The cluster's own queue of commands while it learns its slots or reconnects: off for producers, as above.
    enableOfflineQueue: enableOfflineQueue ?? true,
    // Replies travel by sharded pub/sub on a cluster (replies.ts): a subscriber keeps a connection to each master.
    shardedSubscribers: role === "subscriber",
    lazyConnect: false,
  });
  return closingOnce(cluster);
}

/** A Cluster's states in which its nodes are wanted: the pool running empty then means the cluster has closed. */
const CLUSTER_OPEN = new Set(["connecting", "connect", "ready", "disconnecting"]);

/**
 * A Cluster whose nodes' late ends cannot reopen it once closed. ioredis sets a Cluster to `close` each time its node
 * pool reports `drain` (empty), and the pool reports it at every node's end that finds it empty. Disconnecting empties
 * the pool at once, so the first node to end closes the cluster (then `end`) and each later one sets it back to
 * `close`, where nothing ever leaves it. BullMQ interrupts a worker's blocking wait by disconnecting that connection
 * and, once it has ended, connecting it again: a cluster found in `close` is waited on for a `ready` that never comes,
 * and the worker takes no more jobs and cannot pause or close (a chore's worker in the cluster test stage: 3 runs in
 * 52). Here a drain closes the cluster only while its nodes are wanted. The copies BullMQ makes (duplicate()) are the
 * same.
 */
function closingOnce(cluster: Cluster): Cluster {
  const internals = cluster as unknown as { connectionPool?: EventEmitter; setStatus?: (status: string) => void };
  const { connectionPool: pool, setStatus } = internals;
  if (!pool || typeof setStatus !== "function" || pool.listenerCount("drain") !== 1)
    throw new Error("ioredis's Cluster changed: its node pool's drain is no longer what closingOnce expects");
  pool.removeAllListeners("drain");
  pool.on("drain", () => {
    if (CLUSTER_OPEN.has(cluster.status)) setStatus.call(cluster, "close");
  });
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = (...args: Parameters<Cluster["duplicate"]>) => closingOnce(duplicate(...args));
  return cluster;
}

/** Resolves once the connection is ready; producers fail fast while it is not, so start-up waits for it. */
export function whenReady(redis: RedisConnection, timeoutMs = 10_000): Promise<void> {
  if (redis.status === "ready") return Promise.resolve();
  let onReady: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => redis.once("ready", (onReady = resolve)));
  return withTimeout(ready, timeoutMs, () => new Error(`Redis did not become ready within ${timeoutMs} ms`)).finally(
    () => redis.off("ready", onReady!),
  );
}

/** How long closing waits for a connection that is reconnecting: ioredis retries within 2 s of its server's return. */
export const RECONNECT_SETTLE_MS = 3_000;
const RECONNECTING = new Set(["connecting", "connect", "reconnecting"]);

/**
 * Gives a connection that is reconnecting up to `ms` to be ready, for closing it cleanly. Closed mid-reconnect,
 * ioredis leaves timers armed after close has returned: its 2 s wait for the dead socket's end, which never comes,
 * and, for a blocking connection, BullMQ's watchdog of a wait ioredis never settles (redis/ioredis#2193, #2197); a
 * process closing then cannot exit on its own until they lapse. A server still away after `ms` is given up on.
 */
export async function settleReconnect(redis: RedisConnection, ms = RECONNECT_SETTLE_MS): Promise<void> {
  if (RECONNECTING.has(redis.status)) await whenReady(redis, ms).catch(() => undefined);
}

/**
 * QUIT when connected (pending replies arrive first), after a reconnect in progress has had its chance
 * (settleReconnect); otherwise drop the socket: QUIT would wait for a reconnect.
 */
export async function closeRedis(redis: RedisConnection): Promise<void> {
  await settleReconnect(redis);
  if (redis.status === "ready") {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    redis.disconnect();
  }
}
