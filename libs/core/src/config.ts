import { z } from "zod";
import { bool, int } from "./config-fields";
import { connectionSettings } from "./config-connections";
import { runtimeSettings } from "./config-runtime";
import { DEVELOPMENT_SECRETS, tokenSettings } from "./config-tokens";
import { webhookSettings } from "./config-webhooks";
import { hashTagOf, parseRedisUrl } from "./redis-url";

/**
 * The environment every service reads, validated once at start (README.md "Configuration").
 * Variable names are part of the contract: operators script against them.
 */

export { DEVELOPMENT_SECRETS } from "./config-tokens";

// The groups in the order the variables are checked in (a refusal lists them in it).
const schema = z.object({
  ...connectionSettings,
  ...tokenSettings,
  ...runtimeSettings,
  ...webhookSettings,
  /** live service accounts in the deployment (createServiceAccount refuses past it; deleted ones do not count) */
  MAX_SERVICE_ACCOUNTS: int(1, 100_000).default(1_000),
  /**
   * GraphiQL on a browser's GET of the GraphQL path (served by the gateway: no other origin), a page that queries with
   * the credentials the browser holds for the whole API. Unset: on unless NODE_ENV=production
   */
  GRAPHQL_EXPLORER: bool.optional(),
  /** test result transitions older than this are pruned by the evaluation workers, except each pair's latest */
  TEST_HISTORY_RETENTION_DAYS: int(1, 36_600).default(365),
  /** transitions kept per (entity, test) pair: older ones go when a push records a new one */
  TEST_HISTORY_MAX_TRANSITIONS: int(1, 100_000).default(1_000),
  /** a run diff lists an entity as flapping when it changed more than this many times in the last runs */
  TEST_RUN_DIFF_FLAP_CHANGES: int(1, 1_000).default(2),
  /** how many of a test's last runs (the one recorded included) the flapping window spans */
  TEST_RUN_DIFF_FLAP_RUNS: int(1, 1_000).default(5),
  /** run diffs kept per test: the oldest go when a run starts (and all with TEST_HISTORY_RETENTION_DAYS) */
  TEST_RUN_DIFF_MAX_RUNS: int(1, 10_000).default(100),
  /**
   * how often each evaluation worker looks for platform events to evaluate on change (ms): changes to one entity within
   * it coalesce into one evaluation (docs/evaluation-on-change.md)
   */
  ON_CHANGE_POLL_MS: int(10, 60_000).default(200),
  /** platform events one pass of evaluation on change reads (their entities are evaluated together, each once) */
  ON_CHANGE_BATCH_SIZE: int(1, 10_000).default(1_000),
  /**
   * partitions of the change stream (by entity urn): each is consumed by one evaluation worker at a time under a lease,
   * so as many workers as partitions evaluate in parallel; changing it re-reads from the slowest partition's position
   */
  ON_CHANGE_PARTITIONS: int(1, 256).default(8),
  /** how long a worker's claim of a partition lasts unless renewed (ms): a dead worker's are taken over within it */
  ON_CHANGE_LEASE_MS: int(1_000, 600_000).default(10_000),
  /**
   * how long one pass waits for an owner's evaluation of the pass's changes (ms): what is not done by then carries
   * over to that owner's backlog, evaluated behind it while the pass moves on (docs/evaluation-on-change.md)
   */
  ON_CHANGE_OWNER_BUDGET_MS: int(10, 600_000).default(200),
  /**
   * platform events older than this (days) are pruned once every consumer has read them; listPlatformEvents' readers
   * catch up within it (docs/events.md "Retention")
   */
  PLATFORM_EVENT_RETENTION_DAYS: int(1, 366).default(7),
  // Retention of what grows with use, each applied by a budgeted chore (docs/limits.md "Retention").
  /**
   * versions kept of each (entity, aspect), the latest included: DataHub's version-based retention (maxVersions), for
   * every aspect without an entry in ASPECT_MAX_VERSIONS_BY_ASPECT
   */
  ASPECT_MAX_VERSIONS: int(1, 1_000_000).default(20),
  /** per-aspect exceptions, `aspect=n,aspect=n`: testResults changes with every push that changes a result */
  ASPECT_MAX_VERSIONS_BY_ASPECT: z
    .string()
    .default("testResults=3")
    .transform((text, ctx) => {
      const byAspect: Record<string, number> = {};
      for (const entry of text
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean)) {
        const match = /^([A-Za-z][A-Za-z0-9_]*)=(\d+)$/.exec(entry);
        const n = match ? Number(match[2]) : 0;
        if (!match || n < 1 || n > 1_000_000) {
          ctx.addIssue({ code: "custom", message: `'${entry}' is not aspect=n with n from 1 to 1,000,000` });
          return z.NEVER;
        }
        byAspect[match[1]!] = n;
      }
      return byAspect;
    }),
  /** expired or revoked access token rows are deleted this many days after they stopped working (docs/limits.md) */
  ACCESS_TOKEN_RETENTION_DAYS: int(1, 36_600).default(30),
  /** audit rows older than this are deleted */
  AUDIT_RETENTION_DAYS: int(1, 36_600).default(400),
});

export type Config = Omit<z.output<typeof schema>, "GRAPHQL_EXPLORER" | "ACCESS_TOKEN_FAMILY_MAX_DAYS"> & {
  GRAPHQL_EXPLORER: boolean;
  ACCESS_TOKEN_FAMILY_MAX_DAYS: number;
};

const DAY_SECONDS = 86_400;

export class ConfigError extends Error {}

/** Reads the environment into a typed Config; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset, so `FOO= pnpm start` falls back to the default instead of failing oddly.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      return issue.code === "invalid_type" && present[name] === undefined
        ? `${name} is required`
        : `${name} ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const config: Config = {
    ...parsed.data,
    GRAPHQL_EXPLORER: parsed.data.GRAPHQL_EXPLORER ?? parsed.data.NODE_ENV !== "production",
    // By default a family lives as long as the longest token one may create: rotation renews, it never outlasts that.
    ACCESS_TOKEN_FAMILY_MAX_DAYS:
      parsed.data.ACCESS_TOKEN_FAMILY_MAX_DAYS ??
      Math.ceil(Math.max(...parsed.data.ACCESS_TOKEN_ALLOWED_DURATIONS.map((d) => d.seconds)) / DAY_SECONDS),
  };
  // BullMQ's scripts touch several keys of a queue at once: on a cluster they must hash to one slot.
  if (parseRedisUrl(config.REDIS_URL).cluster && !hashTagOf(config.QUEUE_PREFIX)) {
    throw new ConfigError(
      `Invalid configuration: QUEUE_PREFIX must hold a {hash tag} on Redis Cluster, e.g. {${config.QUEUE_PREFIX}}, so that each queue's keys share one slot`,
    );
  }
  if (config.QUEUE_SHARDS > config.EVALUATION_CONCURRENCY) {
    throw new ConfigError(
      `Invalid configuration: QUEUE_SHARDS (${config.QUEUE_SHARDS}) must be at most EVALUATION_CONCURRENCY (${config.EVALUATION_CONCURRENCY}): an evaluation worker shares its concurrency out over the shards, one job at least each`,
    );
  }
  if (config.NODE_ENV === "production") refuseDevelopmentSettings(config);
  return config;
}

function refuseDevelopmentSettings(config: Config): void {
  const problems: string[] = [];
  if (!config.AUTH_ENABLED) problems.push("AUTH_ENABLED=false is not allowed when NODE_ENV=production");
  // log collectors parse every line: a readable one would reach them as unstructured text
  if (config.LOG_FORMAT === "pretty") problems.push("LOG_FORMAT=pretty is not allowed when NODE_ENV=production");
  for (const [name, value] of Object.entries(DEVELOPMENT_SECRETS)) {
    if (name !== "SYSTEM_CLIENT_ID" && config[name as keyof Config] === value) {
      problems.push(`${name} must be set to a secret of your own when NODE_ENV=production`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
}

/** Start-up helper for main.ts files: a bad configuration stops the process with the message alone. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}
