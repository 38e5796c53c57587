import { z } from "zod";
import { int, url } from "./config-fields";

/**
 * How the processes run and what one caller may use: keep-alive, timeouts, the workers' ports, logs, concurrency,
 * rate limits, evaluation threads, time-series bounds and schedules' limits.
 */
export const runtimeSettings = {
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
  /** the webhook worker's monitoring port (/health, /ready, /metrics), on HOST; 0 = any free port */
  WEBHOOK_WORKER_PORT: int(0, 65535).default(8083),
  /** when set, traces are exported over OTLP/HTTP */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(["http:", "https:"]).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /**
   * json (one object per line, for log collectors) or pretty (one readable line per event, for a developer's
   * terminal). Unset: pretty in development when stdout is a terminal, json otherwise; production is always json.
   */
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
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
  /**
   * tests with evaluateOnChange one user may own (whatever their state): each is evaluated on every change to what it
   * selects, for its owner (docs/evaluation-on-change.md)
   */
};
