/**
 * How REDIS_URL names a Redis deployment: one server (`redis://` or `rediss://`, as ioredis reads it), or a Redis
 * Cluster (`redis-cluster://` or `rediss-cluster://` for TLS) by a comma-separated list of seed nodes:
 *
 *     redis-cluster://[user:password@]host1:port1[,host2:port2,...]
 *
 * The client learns every node and slot from whichever seed answers (CLUSTER SLOTS), so one seed is enough; naming
 * a few lets a start-up survive one being down. Credentials before the first host apply to every node. On a cluster,
 * BullMQ's keys must share one slot: QUEUE_PREFIX must then hold a {hash tag} (see `hashTagOf`).
 */
export type RedisTarget =
  | { cluster: false; url: string }
  | {
      cluster: true;
      nodes: Array<{ host: string; port: number }>;
      username?: string;
      password?: string;
      tls: boolean;
    };

const CLUSTER_PROTOCOLS = { "redis-cluster:": false, "rediss-cluster:": true } as const;

/** Parses REDIS_URL; throws an Error saying what is wrong with it. */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = /^([a-z-]+:)\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "redis:" || scheme === "rediss:") {
    new URL(url); // throws on a malformed URL
    return { cluster: false, url };
  }
  if (!scheme || !(scheme in CLUSTER_PROTOCOLS)) {
    throw new Error("must be a URL starting with redis://, rediss://, redis-cluster:// or rediss-cluster://");
  }
  const tls = CLUSTER_PROTOCOLS[scheme as keyof typeof CLUSTER_PROTOCOLS];
  let rest = url.slice(scheme.length + 2).replace(/\/$/, "");
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const credentials = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = credentials.indexOf(":");
    username = decodeURIComponent(colon >= 0 ? credentials.slice(0, colon) : credentials) || undefined;
    password = colon >= 0 ? decodeURIComponent(credentials.slice(colon + 1)) : undefined;
  }
  const nodes = rest.split(",").map((node) => {
    const match = /^(\[[0-9a-f:.]+\]|[^:/[\]@?#]+):(\d{1,5})$/i.exec(node.trim());
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) {
      throw new Error(`must list the cluster's nodes as host:port[,host:port...] after ${scheme}// ('${node}')`);
    }
    return { host: match[1]!.replace(/^\[|\]$/g, ""), port };
  });
  return { cluster: true, nodes, username, password, tls };
}

/** The {hash tag} of a key prefix (what Redis Cluster hashes a key by), or null when it has none. */
export function hashTagOf(prefix: string): string | null {
  const open = prefix.indexOf("{");
  if (open < 0) return null;
  const close = prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : null;
}
