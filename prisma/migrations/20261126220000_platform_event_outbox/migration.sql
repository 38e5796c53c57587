-- Per test: whether a change of an entity it selects (or of its own definition) re-evaluates it by itself.
ALTER TABLE "metadata_test" ADD COLUMN "evaluate_on_change" BOOLEAN NOT NULL DEFAULT true;

-- The platform-event outbox: one row per event, written in the transaction of the change it records. id is the
-- order of insertion, seq the order of commit, given to committed events by the sequencer (one at a time), which is
-- what consumers read in: an event committed after a later id was read is sequenced after it, never skipped.
CREATE TABLE "platform_event" (
    "id" BIGSERIAL NOT NULL,
    "seq" BIGINT,
    "event_type" VARCHAR(64) NOT NULL,
    "entity_urn" TEXT NOT NULL,
    "entity_type" VARCHAR(256) NOT NULL,
    "aspect_name" VARCHAR(256),
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "platform_event_pkey" PRIMARY KEY ("id")
);

-- One row per consumer: the seq of the last event it has finished with.
CREATE TABLE "platform_event_cursor" (
    "consumer" VARCHAR(64) NOT NULL,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "platform_event_cursor_pkey" PRIMARY KEY ("consumer")
);

CREATE UNIQUE INDEX "platform_event_seq_key" ON "platform_event"("seq");
CREATE INDEX "platform_event_id_idx" ON "platform_event"("id") WHERE ("seq" IS NULL);
CREATE INDEX "platform_event_created_at_idx" ON "platform_event"("created_at");

-- The commit-order positions the sequencer hands out.
CREATE SEQUENCE "platform_event_position";
