-- Webhooks (docs/webhooks.md): subscriptions, and the delivery log of each event to each subscription.
CREATE TABLE "webhook_subscription" (
    "id" UUID NOT NULL,
    "owner_urn" TEXT NOT NULL,
    "owner_token_id" TEXT,
    "url" VARCHAR(2048) NOT NULL,
    "event_types" TEXT[],
    "categories" TEXT[],
    "entity_urn" TEXT,
    "actor_urn" TEXT,
    "test_urn" TEXT,
    "description" VARCHAR(512),
    "active" BOOLEAN NOT NULL DEFAULT true,
    "disabled_reason" VARCHAR(512),
    "secret_sealed" VARCHAR(256) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_subscription_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "webhook_delivery" (
    "id" UUID NOT NULL,
    "subscription_id" UUID NOT NULL,
    "event_seq" BIGINT NOT NULL,
    "event_id" VARCHAR(64) NOT NULL,
    "event_type" VARCHAR(64) NOT NULL,
    "entity_type" VARCHAR(256) NOT NULL,
    "category" VARCHAR(64),
    "subject_actor" TEXT,
    "generation" INTEGER NOT NULL DEFAULT 0,
    "status" VARCHAR(16) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "response_status" INTEGER,
    "duration_ms" INTEGER,
    "error" VARCHAR(512),
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_delivery_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "webhook_subscription_owner_urn_idx" ON "webhook_subscription"("owner_urn");
CREATE UNIQUE INDEX "webhook_delivery_subscription_id_event_seq_generation_key" ON "webhook_delivery"("subscription_id", "event_seq", "generation");
CREATE INDEX "webhook_delivery_subscription_id_created_at_idx" ON "webhook_delivery"("subscription_id", "created_at" DESC);
CREATE INDEX "webhook_delivery_status_updated_at_idx" ON "webhook_delivery"("status", "updated_at");
CREATE INDEX "webhook_delivery_created_at_idx" ON "webhook_delivery"("created_at");

ALTER TABLE "webhook_delivery" ADD CONSTRAINT "webhook_delivery_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "webhook_subscription"("id") ON DELETE CASCADE ON UPDATE CASCADE;
