import { webhookTargetPolicy, type Config, type Logger, type PeriodicLoop } from "@mdp/core";
import { ownerPrivilegesReader, type Database } from "@mdp/db";
import { closeWorker, createWorker, Producer, type JobObserver, type RedisConnection } from "@mdp/queues";
import type { Worker } from "bullmq";
import {
  pruneWebhookDeliveriesFully,
  reconcileWebhookDeliveries,
  WEBHOOK_PRUNE_EVERY_MS,
  WEBHOOK_RECONCILE_EVERY_MS,
  WebhookFanOut,
  webhookDeliveryHandler,
  webhookFanOutLoop,
  type WebhookSettings,
} from "./webhooks";

export type WebhookConfig = Pick<
  Config,
  | "NODE_ENV"
  | "WEBHOOK_ALLOW_PRIVATE_TARGETS"
  | "WEBHOOK_DELIVERY_CONCURRENCY"
  | "WEBHOOK_SUBSCRIPTION_CONCURRENCY"
  | "WEBHOOK_TIMEOUT_MS"
  | "WEBHOOK_MAX_ATTEMPTS"
  | "WEBHOOK_RETRY_BASE_MS"
  | "WEBHOOK_MAX_PAYLOAD_BYTES"
  | "WEBHOOK_DELIVERY_RETENTION_DAYS"
  | "WEBHOOK_POLL_MS"
  | "TOKEN_SIGNING_KEY"
  | "ROOT_USER_URN"
  | "QUEUE_PREFIX"
>;

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
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    perSubscription: config.WEBHOOK_SUBSCRIPTION_CONCURRENCY,
    perOwner: webhookOwnerConcurrency(config),
    serverSecret: config.TOKEN_SIGNING_KEY,
    policy: webhookTargetPolicy(config),
  };
}

export interface RunningWebhooks {
  fanOut: WebhookFanOut;
  worker: Worker;
  producer: Producer<"webhookDelivery">;
  /** the chores' work (the process registers them with its other chores) */
  chores: Array<{ name: string; everyMs: number; run: () => Promise<Record<string, number>> }>;
  /** starts the fan-out loop and the delivery worker */
  start(): void;
  stop(): Promise<void>;
}

/**
 * Webhooks in an evaluation worker (docs/webhooks.md): the outbox's `webhooks` consumer (one pass at a time in the
 * cluster: its cursor's lock), the delivery jobs' worker (WEBHOOK_DELIVERY_CONCURRENCY at once), and the chores that
 * requeue lost jobs and prune the delivery log.
 */
export function setUpWebhooks(
  db: Database,
  connections: { worker: RedisConnection; producer: RedisConnection },
  config: WebhookConfig,
  logger: Logger,
  observer?: JobObserver,
): RunningWebhooks {
  const settings = webhookSettings(config);
  const privileges = ownerPrivilegesReader(db.prisma, config.ROOT_USER_URN);
  const producer = new Producer("webhookDelivery", connections.producer, config.QUEUE_PREFIX);
  const fanOut = new WebhookFanOut(db.pool, privileges, producer, settings);
  const worker = createWorker("webhookDelivery", webhookDeliveryHandler(db.pool, privileges, settings, logger), {
    connection: connections.worker,
    prefix: config.QUEUE_PREFIX,
    concurrency: config.WEBHOOK_DELIVERY_CONCURRENCY,
    logger,
    observer,
    jobLogLevel: "debug",
  });
  let loop: PeriodicLoop | undefined;
  return {
    fanOut,
    worker,
    producer,
    chores: [
      {
        name: "reconcile-webhook-deliveries",
        everyMs: WEBHOOK_RECONCILE_EVERY_MS,
        run: () => reconcileWebhookDeliveries(db.pool, producer, settings),
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
      void worker.run().catch((error: unknown) => logger.error({ err: error }, "webhook delivery worker stopped"));
    },
    async stop() {
      await loop?.stop();
      await closeWorker(worker);
      await producer.close();
    },
  };
}
