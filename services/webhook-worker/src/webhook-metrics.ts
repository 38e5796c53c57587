import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { webhookDeliveryGauges, type Database } from "@mdp/db";

/**
 * Webhook delivery on the worker's /metrics (docs/webhooks.md "Metrics"): attempts by outcome, delivery latency,
 * pending deliveries by state and open circuits (the two gauges read from PostgreSQL at each scrape: the cluster's
 * figures, the same on every worker). Labels take fixed values only.
 */
/** The webhook worker's own metrics, served at its /metrics beside node's and its chores queue's. */
export const webhookRegistry = new Registry();

export type WebhookOutcome = "delivered" | "retried" | "failed" | "skipped" | "dropped";

const deliveries = new Counter({
  name: "webhook_deliveries_total",
  help:
    "Webhook delivery outcomes by this worker: delivered (a 2xx), retried (an attempt failed, another is scheduled), " +
    "failed (attempts spent or refused), skipped (never sent: owner may not read it, subscription off), dropped " +
    "(past WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION)",
  labelNames: ["outcome"] as const,
  registers: [webhookRegistry],
});
for (const outcome of ["delivered", "retried", "failed", "skipped", "dropped"]) deliveries.inc({ outcome }, 0);

const latency = new Histogram({
  name: "webhook_delivery_latency_seconds",
  help: "From a delivery's creation (its event fanned out, or a replay) to the 2xx that ended it, retries included",
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 7200, 36000, 100000],
  registers: [webhookRegistry],
});

export function countWebhookOutcome(outcome: WebhookOutcome, n = 1, latencySeconds?: number): void {
  deliveries.inc({ outcome }, n);
  if (latencySeconds !== undefined) latency.observe(Math.max(0, latencySeconds));
}

/**
 * The gauges, read from `db` at each scrape: `webhook_deliveries_pending{state}` (due, scheduled: waiting for a
 * retry, in_flight, paused: its circuit open or subscription off) and `webhook_circuits_open`.
 */
export function registerWebhookGauges(db: Pick<Database, "pool">): void {
  let read: ReturnType<typeof webhookDeliveryGauges> | undefined;
  // One query serves both gauges of one scrape.
  const gauges = () =>
    (read ??= webhookDeliveryGauges(db.pool).finally(() => setTimeout(() => (read = undefined), 1_000).unref()));
  webhookRegistry.removeSingleMetric("webhook_deliveries_pending");
  webhookRegistry.removeSingleMetric("webhook_circuits_open");
  new Gauge({
    name: "webhook_deliveries_pending",
    help: "Webhook deliveries pending in the cluster, by state: due, scheduled (a retry later), in_flight, paused",
    labelNames: ["state"] as const,
    registers: [webhookRegistry],
    async collect() {
      const { pending } = await gauges();
      for (const [state, n] of Object.entries(pending)) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "webhook_circuits_open",
    help: "Active webhook subscriptions whose circuit is open (deliveries paused, probing)",
    registers: [webhookRegistry],
    async collect() {
      this.set((await gauges()).openCircuits);
    },
  });
}
