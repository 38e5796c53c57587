-- The change stream consumed in partitions (by entity urn), each by one worker at a time under a lease, and per
-- partition and owner, the entities whose evaluation on change carried over past the owner's share of a pass.
CREATE TABLE "platform_event_partition" (
    "consumer" VARCHAR(64) NOT NULL,
    "partition" INTEGER NOT NULL,
    "partitions" INTEGER NOT NULL,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "holder" VARCHAR(256),
    "lease_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "platform_event_partition_pkey" PRIMARY KEY ("consumer","partition")
);

CREATE TABLE "on_change_backlog" (
    "partition" INTEGER NOT NULL,
    "owner_urn" TEXT NOT NULL,
    "entity_urn" TEXT NOT NULL,
    "entity_type" VARCHAR(256) NOT NULL,
    "seq" BIGINT NOT NULL,

    CONSTRAINT "on_change_backlog_pkey" PRIMARY KEY ("partition","owner_urn","entity_urn")
);

CREATE INDEX "on_change_backlog_partition_owner_urn_seq_idx" ON "on_change_backlog"("partition", "owner_urn", "seq");

CREATE TABLE "platform_event_member" (
    "consumer" VARCHAR(64) NOT NULL,
    "holder" VARCHAR(256) NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "platform_event_member_pkey" PRIMARY KEY ("consumer","holder")
);
