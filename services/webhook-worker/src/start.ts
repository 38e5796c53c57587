import type { Config, Logger, PeriodicLoop } from "@mdp/core";
import { webhookTargetPolicy, WEBHOOK_MAX_PROBE_MS } from "@mdp/webhooks";
import { ownerPrivilegesReader, type Database } from "@mdp/db";
import {
  pruneWebhookDeliveriesFully,
  settleWebhookDeliveriesFully,
  WEBHOOK_PRUNE_EVERY_MS,
  WEBHOOK_SETTLE_EVERY_MS,
} from "./delivery-chores";
import { WebhookDispatcher } from "./dispatcher";
import { WebhookFanOut, webhookFanOutLoop } from "./fan-out";
import type { WebhookSettings } from "./settings";

export type WebhookConfig = Pick<
  Config,
  | "NODE_ENV"
  | "WEBHOOK_ALLOW_PRIVATE_TARGETS"
  | "WEBHOOK_DELIVERY_CONCURRENCY"
  | "WEBHOOK_SUBSCRIPTION_CONCURRENCY"
  | "WEBHOOK_TIMEOUT_MS"
  | "WEBHOOK_RETRY_SCHEDULE"
  | "WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION"
  | "WEBHOOK_CIRCUIT_FAILURES"
  | "WEBHOOK_CIRCUIT_PROBE_MS"
  | "WEBHOOK_DISABLE_AFTER_DAYS"
  | "WEBHOOK_MAX_PAYLOAD_BYTES"
  | "WEBHOOK_DELIVERY_RETENTION_DAYS"
  | "WEBHOOK_POLL_MS"
  | "TOKEN_SIGNING_KEY"
  | "ROOT_USER_URN"
  | "URN_NAMESPACE"
>;

/** How often an idle dispatcher looks for deliveries another process wrote (a replay, another worker's fan-out). */
export const WEBHOOK_IDLE_POLL_MS = 1_000;

/**
 * POSTs one owner's subscriptions may have in flight at once per worker: half its slots (at least one subscription's
 * share), so one user's subscriptions, all hanging, never hold every slot while other users' deliveries wait.
 */
export function webhookOwnerConcurrency(
  config: Pick<Config, "WEBHOOK_DELIVERY_CONCURRENCY" | "WEBHOOK_SUBSCRIPTION_CONCURRENCY">,
): number {
  return Math.max(config.WEBHOOK_SUBSCRIPTION_CONCURRENCY, Math.floor(config.WEBHOOK_DELIVERY_CONCURRENCY / 2));
}

export function webhookSettings(config: WebhookConfig): WebhookSettings {
  return {
    maxPayloadBytes: config.WEBHOOK_MAX_PAYLOAD_BYTES,
    batchSize: 1_000,
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    concurrency: config.WEBHOOK_DELIVERY_CONCURRENCY,
    perSubscription: config.WEBHOOK_SUBSCRIPTION_CONCURRENCY,
    perOwner: webhookOwnerConcurrency(config),
    maxPendingPerSubscription: config.WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION,
    circuit: {
      failures: config.WEBHOOK_CIRCUIT_FAILURES,
      probeMs: config.WEBHOOK_CIRCUIT_PROBE_MS,
      maxProbeMs: Math.max(config.WEBHOOK_CIRCUIT_PROBE_MS, WEBHOOK_MAX_PROBE_MS),
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER_DAYS * 86_400_000,
    },
    idlePollMs: Math.max(config.WEBHOOK_POLL_MS, WEBHOOK_IDLE_POLL_MS),
    serverSecret: config.TOKEN_SIGNING_KEY,
    urnNamespace: config.URN_NAMESPACE,
    policy: webhookTargetPolicy(config),
  };
}

export interface RunningWebhooks {
  fanOut: WebhookFanOut;
  dispatcher: WebhookDispatcher;
  /** the chores' work (the process registers them with its other chores) */
  chores: Array<{ name: string; everyMs: number; run: () => Promise<Record<string, number>> }>;
  /** starts the fan-out loop and the dispatcher */
  start(): void;
  stop(): Promise<void>;
}

/**
 * The webhook worker's work (docs/webhooks.md): the outbox's `webhooks` consumer (one pass at a time in the
 * cluster: its cursor's lock), the dispatcher claiming due deliveries from PostgreSQL (WEBHOOK_DELIVERY_CONCURRENCY
 * at once), and the chores that let go of a dead worker's deliveries and prune the delivery log. No Redis: deliveries
 * wait in PostgreSQL.
 */
export function setUpWebhooks(db: Database, config: WebhookConfig, logger: Logger): RunningWebhooks {
  const settings = webhookSettings(config);
  const privileges = ownerPrivilegesReader(db.prisma, config.ROOT_USER_URN);
  const dispatcher = new WebhookDispatcher(db.pool, privileges, settings, logger);
  const fanOut = new WebhookFanOut(db.pool, privileges, settings, () => dispatcher.wake());
  let loop: PeriodicLoop | undefined;
  return {
    fanOut,
    dispatcher,
    chores: [
      {
        name: "settle-webhook-deliveries",
        everyMs: WEBHOOK_SETTLE_EVERY_MS,
        run: () => settleWebhookDeliveriesFully(db.pool),
      },
      {
        name: "prune-webhook-deliveries",
        everyMs: WEBHOOK_PRUNE_EVERY_MS,
        run: async () => ({
          deleted: await pruneWebhookDeliveriesFully(db.pool, config.WEBHOOK_DELIVERY_RETENTION_DAYS),
        }),
      },
    ],
    start() {
      loop ??= webhookFanOutLoop(fanOut, config.WEBHOOK_POLL_MS, logger);
      dispatcher.start();
    },
    async stop() {
      await loop?.stop();
      await dispatcher.stop();
    },
  };
}
