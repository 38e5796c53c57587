import { z } from "zod";
import { int, url } from "./config-fields";
import { parseRedisUrl } from "./redis-url";

/** Where the services listen and connect: the HTTP server, PostgreSQL and its standbys, Redis and the queues. */
export const connectionSettings = {
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  /** gateway HTTP port */
  PORT: int(0, 65535).default(8080),
  /** bind address of the gateway and of the workers' monitoring ports */
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: url(["postgresql:", "postgres:"]),
  /**
   * PostgreSQL hot standbys of DATABASE_URL, comma-separated: stale-tolerant reads go to them (docs/postgres.md).
   * Empty: every read on DATABASE_URL.
   */
  DATABASE_REPLICA_URLS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((u) => u.trim())
        .filter((u) => u !== ""),
    )
    .pipe(z.array(url(["postgresql:", "postgres:"]))),
  /** a replica further behind the primary than this is skipped (measured once a second per process) */
  REPLICA_MAX_LAG_MS: int(0, 3_600_000).default(5000),
  /**
   * where migrations connect (`pnpm db:migrate`, `pnpm start`): PostgreSQL itself when DATABASE_URL names a pooler in
   * transaction mode, since a migration holds a session (its lock); DATABASE_URL when unset. The services never use it.
   */
  DATABASE_DIRECT_URL: url(["postgresql:", "postgres:"]).optional(),
  /** one server (redis://, rediss://) or a Redis Cluster by its seed nodes (redis-cluster://h1:p1,h2:p2): redis-url.ts */
  REDIS_URL: z.string().superRefine((v, ctx) => {
    try {
      parseRedisUrl(v);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
    }
  }),
  /** BullMQ key prefix; must hold a {hash tag} on Redis Cluster (checked in loadConfig) */
  QUEUE_PREFIX: z.string().min(1).default("mdp"),
  /**
   * how many BullMQ queues the evaluate queue is split into, each under a hash tag of its own (libs/queues shards.ts),
   * so that on a Redis Cluster its traffic spreads over that many masters; 1 (the default) is the one queue, and on
   * one server more shards change nothing but the queues' names. At most EVALUATION_CONCURRENCY (a worker runs at
   * least one job per shard). Every process must be given the same value.
   */
  QUEUE_SHARDS: int(1, 64).default(1),
};
