import { z } from "zod";
import { bool, int } from "./config-fields";
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseRetrySchedule } from "./retry-schedule";

/** Webhook subscriptions and their deliveries (docs/webhooks.md). */
export const webhookSettings = {
  MAX_ON_CHANGE_TESTS_PER_USER: int(1, 10_000).default(50),
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
  /**
   * when a delivery's attempts are made, each after the previous one (the first after the event): a comma-separated
   * list of durations (`0`, `500ms`, `5s`, `5m`, `2h`; at most 20, each at most 24 h), one attempt each; Svix's by
   * default (docs/webhooks.md "Retries")
   */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
    .transform((v, ctx) => {
      try {
        return parseRetrySchedule(v);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** a subscription's deliveries waiting to be sent: past it the oldest are dropped (SKIPPED, counted) */
  WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION: int(1, 1_000_000).default(10_000),
  /** attempts of a subscription failed one after another that open its circuit (deliveries paused, probes) */
  WEBHOOK_CIRCUIT_FAILURES: int(1, 1_000).default(5),
  /** an open circuit's first probe after this (ms); each failed probe doubles it, up to an hour */
  WEBHOOK_CIRCUIT_PROBE_MS: int(10, 3_600_000).default(30_000),
  /** a subscription whose every attempt failed for this many days is turned off (an event and an audit row) */
  WEBHOOK_DISABLE_AFTER_DAYS: int(1, 365).default(5),
  /** an event body larger than this is sent as a reference to the event (docs/webhooks.md "Bounds") */
  WEBHOOK_MAX_PAYLOAD_BYTES: int(1_024, 1_048_576).default(65_536),
  /** delivery log rows older than this are pruned */
  WEBHOOK_DELIVERY_RETENTION_DAYS: int(1, 365).default(7),
  /** how often each evaluation worker fans new platform events out to subscriptions (ms) */
  WEBHOOK_POLL_MS: int(10, 60_000).default(200),
};
