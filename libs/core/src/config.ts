import { z } from "zod";
import { isoDurationSeconds } from "./iso-duration";
import { hashTagOf, parseRedisUrl } from "./redis-url";

/**
 * The environment every service reads, validated once at start (README.md "Configuration").
 * Variable names are part of the contract: operators script against them.
 */

// Development defaults: usable out of the box on a laptop, refused when NODE_ENV=production.
export const DEVELOPMENT_SECRETS = {
  TOKEN_SIGNING_KEY: "development-signing-key-not-for-production-use",
  TOKEN_SALT: "development-token-salt",
  SYSTEM_CLIENT_ID: "__datahub_system",
  SYSTEM_CLIENT_SECRET: "development-system-client-secret",
} as const;

const bool = z.enum(["true", "false"], { error: "must be 'true' or 'false'" }).transform((v) => v === "true");
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { error: "must be a whole number" })
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, { error: `must be at least ${min}` })
        .max(max, { error: `must be at most ${max}` }),
    );
const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { error: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(" or ")}` },
  );

const schema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  /** gateway HTTP port */
  PORT: int(0, 65535).default(8080),
  /** bind address of the gateway and of the workers' monitoring ports */
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: url(["postgresql:", "postgres:"]),
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
  /** false trusts X-Platform-Actor alone: local development only */
  AUTH_ENABLED: bool.default(true),
  SYSTEM_CLIENT_ID: z.string().min(1).default(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID),
  SYSTEM_CLIENT_SECRET: z
    .string()
    .min(16, { error: "must be at least 16 characters" })
    .default(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET),
  /** the user holding every privilege through a built-in policy */
  ROOT_USER_URN: z
    .string()
    .regex(/^urn:[^:]+:corpuser:.+$/, { error: "must be a user urn like urn:li:corpuser:admin" })
    .default("urn:li:corpuser:admin"),
  /** HS256 key for access tokens */
  TOKEN_SIGNING_KEY: z
    .string()
    .min(32, { error: "must be at least 32 characters" })
    .default(DEVELOPMENT_SECRETS.TOKEN_SIGNING_KEY),
  /** salt of the stored token hashes */
  TOKEN_SALT: z.string().min(16, { error: "must be at least 16 characters" }).default(DEVELOPMENT_SECRETS.TOKEN_SALT),
  URN_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_-]*$/, { error: "must be letters, digits, '_' or '-'" })
    .default("li"),
  ACCESS_TOKEN_ALLOW_NO_EXPIRY: bool.default(false),
  /**
   * revokes every live access token neither used nor created for this many days (a cluster-wide chore of the gateways,
   * hourly; each revocation audited, reason `idle`); unset: tokens are never revoked for idleness
   */
  ACCESS_TOKEN_IDLE_REVOKE_DAYS: int(1, 36_500).optional(),
  /**
   * records what each access token is used for (its last clients, requests by operation: AccessTokenMetadata.usage);
   * false leaves usage empty (lastUsedAt is kept either way). bench/tokens compares the two.
   */
  ACCESS_TOKEN_USAGE_RECORDING: bool.default(true),
  /**
   * the lifetimes createAccessToken may mint, ISO-8601, comma-separated (P1M = 30 days, P1Y = 365 days), whether asked
   * for as durationIso or as the duration enum; tokens minted before a change can be listed and revoked
   * (listAccessTokens' outsideDurationPolicy filter, revokeAccessTokensOutsidePolicy). NO_EXPIRY is
   * ACCESS_TOKEN_ALLOW_NO_EXPIRY's.
   */
  ACCESS_TOKEN_ALLOWED_DURATIONS: z
    .string()
    .default("PT1H,P1D,P7D,P30D,P90D,P180D,P365D")
    .transform((text, ctx) => {
      const allowed = text
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "")
        .map((iso) => ({ iso: iso.toUpperCase(), seconds: isoDurationSeconds(iso) }));
      const bad = allowed.filter((d) => d.seconds === null).map((d) => d.iso);
      if (allowed.length === 0 || bad.length > 0) {
        ctx.addIssue({
          code: "custom",
          message:
            allowed.length === 0
              ? "must list at least one ISO-8601 duration, e.g. PT1H,P30D"
              : `${bad.join(", ")}: not ISO-8601 durations (e.g. PT1H, P30D)`,
        });
        return z.NEVER;
      }
      return allowed as Array<{ iso: string; seconds: number }>;
    }),
  /**
   * how long the gateway keeps an idle keep-alive connection open; above a load balancer's idle timeout (AWS ALB's and
   * GCP's are 60 s), so the balancer, never the gateway, closes an idle connection (a gateway closing it under a request
   * the balancer is sending answers that request with a reset, which the balancer turns into a 502)
   */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(1_000, 600_000).default(65_000),
  /** how long POST /gms/test?action=evaluate waits for the worker before answering 504 */
  EVALUATE_TIMEOUT_MS: int(1, 3_600_000).default(30_000),
  /** a replacement entity registry (YAML); unset = the built-in default */
  ENTITY_REGISTRY_PATH: z.string().min(1).optional(),
  /**
   * the truncation worker's monitoring port (/health, /ready, /metrics), on HOST; 0 = any free port (tests), which the
   * worker logs ("monitoring listening")
   */
  TRUNCATION_WORKER_PORT: int(0, 65535).default(8081),
  /** the evaluation worker's monitoring port (/health, /ready, /metrics), on HOST; 0 = any free port */
  EVALUATION_WORKER_PORT: int(0, 65535).default(8082),
  /** when set, traces are exported over OTLP/HTTP */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(["http:", "https:"]).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TRUNCATION_CONCURRENCY: int(1, 64).default(1),
  EVALUATION_CONCURRENCY: int(1, 256).default(8),
  /**
   * how long one evaluate request's or one runTest batch's evaluation may run in its thread before the worker stops
   * it (the thread is replaced) and refuses the request naming the limit
   */
  EVALUATION_TIME_LIMIT_MS: int(1, 20_000).default(10_000),
  /** per actor per minute, shared by every gateway replica; 0 = off; the system client is never limited */
  RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: int(0, 1_000_000).default(30),
  /** entities evaluated (evaluate counts 1, batchEvaluate its urns) per actor per minute; 0 = off */
  RATE_LIMIT_EVALUATIONS_PER_MINUTE: int(0, 10_000_000).default(1_200),
  /**
   * seconds of evaluation-thread time per actor per minute (each evaluate/batchEvaluate is charged its thread time
   * once answered; an actor past it is refused new evaluations); 0 = off
   */
  RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: int(0, 1_000_000).default(30),
  /** runTest calls per actor per minute; 0 = off */
  RATE_LIMIT_TEST_RUNS_PER_MINUTE: int(0, 1_000_000).default(10),
  /** gateway replicas: while Redis is unavailable each one enforces its share (limit ÷ this) in memory */
  RATE_LIMIT_REPLICAS: int(1, 1_000).default(1),
  /**
   * threads each evaluation worker evaluates in: one slow evaluation holds one of them, the others keep serving
   * (at least 2, so that one cannot hold them all)
   */
  EVALUATION_THREADS: int(2, 64).default(4),
  /** heap (old generation) one evaluation thread may grow to; an evaluation that needs more is refused */
  EVALUATION_MEMORY_LIMIT_MB: int(16, 4_096).default(128),
  /** distinct (aspect, UTC day) pairs one time-series write may touch: its transaction locks each day's partition */
  TIMESERIES_MAX_DAYS_PER_WRITE: int(1, 1_000).default(100),
  /** day partitions one time-series aspect may hold; truncation frees them */
  TIMESERIES_MAX_PARTITIONS_PER_ASPECT: int(1, 36_600).default(1_000),
  /** how far after now a time-series row's timestampMillis may lie (writers' clock skew); at most 366 days */
  TIMESERIES_MAX_FUTURE_MS: int(0, 31_622_400_000).default(86_400_000),
  /**
   * the shortest time between two firings of any schedule (a test's schedule.cron, a retention policy's cron), checked
   * when it is written; tests of the schedulers themselves lower it to 1 (BullMQ's cron takes a seconds field)
   */
  SCHEDULE_MIN_INTERVAL_SECONDS: int(1, 86_400).default(60),
  /**
   * schedules one user may own (scheduled tests and retention policies whose owner it is): each fires by itself, so
   * the count bounds what one user sets running without being there
   */
  MAX_SCHEDULES_PER_USER: int(1, 10_000).default(20),
  /** webhook subscriptions one user may own (docs/webhooks.md) */
  MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: int(1, 1_000).default(10),
  /** in production, whether webhook urls may resolve to loopback, private, link-local or metadata addresses */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool.default(false),
  /** deliveries each evaluation worker makes at once, all subscriptions together */
  WEBHOOK_DELIVERY_CONCURRENCY: int(1, 1_000).default(16),
  /** deliveries to one subscription each worker makes at once: a hanging endpoint holds no more of the slots */
  WEBHOOK_SUBSCRIPTION_CONCURRENCY: int(1, 100).default(2),
  /** one POST's limit, connection to response (ms) */
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
  /** attempts of one delivery, the first included (exponential backoff between them) */
  WEBHOOK_MAX_ATTEMPTS: int(1, 30).default(10),
  /** the first retry's delay (ms); each next one doubles */
  WEBHOOK_RETRY_BASE_MS: int(10, 3_600_000).default(5_000),
  /** an event body larger than this is sent as a reference to the event (docs/webhooks.md "Bounds") */
  WEBHOOK_MAX_PAYLOAD_BYTES: int(1_024, 1_048_576).default(65_536),
  /** delivery log rows older than this are pruned */
  WEBHOOK_DELIVERY_RETENTION_DAYS: int(1, 365).default(7),
  /** how often each evaluation worker fans new platform events out to subscriptions (ms) */
  WEBHOOK_POLL_MS: int(10, 60_000).default(200),
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
   * platform events older than this (days) are pruned once every consumer has read them; listPlatformEvents' readers
   * catch up within it (docs/events.md "Retention")
   */
  PLATFORM_EVENT_RETENTION_DAYS: int(1, 366).default(7),
});

export type Config = Omit<z.output<typeof schema>, "GRAPHQL_EXPLORER"> & { GRAPHQL_EXPLORER: boolean };

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
  };
  // BullMQ's scripts touch several keys of a queue at once: on a cluster they must hash to one slot.
  if (parseRedisUrl(config.REDIS_URL).cluster && !hashTagOf(config.QUEUE_PREFIX)) {
    throw new ConfigError(
      `Invalid configuration: QUEUE_PREFIX must hold a {hash tag} on Redis Cluster, e.g. {${config.QUEUE_PREFIX}}, so that each queue's keys share one slot`,
    );
  }
  if (config.NODE_ENV === "production") refuseDevelopmentSettings(config);
  return config;
}

function refuseDevelopmentSettings(config: Config): void {
  const problems: string[] = [];
  if (!config.AUTH_ENABLED) problems.push("AUTH_ENABLED=false is not allowed when NODE_ENV=production");
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
