-- Webhook deliveries are claimed from PostgreSQL (docs/webhooks.md "How delivery works"): each pending row's next
-- attempt time and the lease of the worker holding it, and per subscription its circuit, its run of failures, the
-- deliveries dropped past its pending bound, and the secret a rotation replaced while both sign.
ALTER TABLE "webhook_delivery" ADD COLUMN     "next_attempt_at" TIMESTAMPTZ(3),
ADD COLUMN     "lease_until" TIMESTAMPTZ(3);

ALTER TABLE "webhook_subscription" ADD COLUMN     "previous_secret_sealed" VARCHAR(256),
ADD COLUMN     "previous_secret_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "failing_since" TIMESTAMPTZ(3),
ADD COLUMN     "circuit_state" VARCHAR(16) NOT NULL DEFAULT 'CLOSED',
ADD COLUMN     "circuit_opened_at" TIMESTAMPTZ(3),
ADD COLUMN     "circuit_next_probe_at" TIMESTAMPTZ(3),
ADD COLUMN     "circuit_probes" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "dropped_deliveries" BIGINT NOT NULL DEFAULT 0;

-- What was pending (queued as BullMQ jobs until now) is due at once.
UPDATE "webhook_delivery" SET "next_attempt_at" = now() WHERE "status" = 'PENDING';

CREATE INDEX "webhook_delivery_due_idx" ON "webhook_delivery"("subscription_id", "next_attempt_at") WHERE (((status)::text = 'PENDING'::text) AND (lease_until IS NULL));

CREATE INDEX "webhook_delivery_leased_idx" ON "webhook_delivery"("subscription_id", "lease_until") WHERE (((status)::text = 'PENDING'::text) AND (lease_until IS NOT NULL));

CREATE INDEX "webhook_delivery_pending_idx" ON "webhook_delivery"("subscription_id", "created_at") WHERE ((status)::text = 'PENDING'::text);
