-- CreateEnum
CREATE TYPE "AccessTokenType" AS ENUM ('PERSONAL');

-- CreateEnum
CREATE TYPE "PolicyType" AS ENUM ('PLATFORM', 'METADATA');

-- CreateEnum
CREATE TYPE "PolicyState" AS ENUM ('ACTIVE', 'INACTIVE');

-- CreateEnum
CREATE TYPE "TestState" AS ENUM ('ACTIVE', 'INACTIVE');

-- CreateEnum
CREATE TYPE "TaskType" AS ENUM ('TRUNCATE_TIMESERIES', 'EVALUATE_TESTS');

-- CreateEnum
CREATE TYPE "TaskState" AS ENUM ('waiting', 'active', 'completed', 'failed', 'cancelled');

-- CreateTable
CREATE TABLE "access_token" (
    "id" UUID NOT NULL,
    "type" "AccessTokenType" NOT NULL DEFAULT 'PERSONAL',
    "name" VARCHAR(256) NOT NULL,
    "description" VARCHAR(2000),
    "actor_urn" TEXT NOT NULL,
    "owner_urn" TEXT NOT NULL,
    "token_hash" CHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "revoked_by" TEXT,
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "access_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "policy" (
    "urn" TEXT NOT NULL,
    "type" "PolicyType" NOT NULL DEFAULT 'PLATFORM',
    "name" VARCHAR(256) NOT NULL,
    "description" VARCHAR(2000),
    "state" "PolicyState" NOT NULL,
    "privileges" TEXT[],
    "users" TEXT[],
    "groups" TEXT[],
    "all_users" BOOLEAN NOT NULL DEFAULT false,
    "editable" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "policy_pkey" PRIMARY KEY ("urn")
);

-- CreateTable
CREATE TABLE "corp_group" (
    "urn" TEXT NOT NULL,
    "name" VARCHAR(256) NOT NULL,
    "description" VARCHAR(2000),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "corp_group_pkey" PRIMARY KEY ("urn")
);

-- CreateTable
CREATE TABLE "group_member" (
    "group_urn" TEXT NOT NULL,
    "user_urn" TEXT NOT NULL,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "group_member_pkey" PRIMARY KEY ("group_urn","user_urn")
);

-- CreateTable
CREATE TABLE "aspect" (
    "urn" TEXT NOT NULL,
    "aspect_name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "entity_type" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,

    CONSTRAINT "aspect_pkey" PRIMARY KEY ("urn","aspect_name","version")
);

-- CreateTable
CREATE TABLE "timeseries_aspect" (
    "id" BIGSERIAL NOT NULL,
    "entity_type" TEXT NOT NULL,
    "aspect_name" TEXT NOT NULL,
    "timestamp_millis" BIGINT NOT NULL,
    "urn" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "timeseries_aspect_pkey" PRIMARY KEY ("entity_type","aspect_name","timestamp_millis","id")
);

-- CreateTable
CREATE TABLE "metadata_test" (
    "urn" TEXT NOT NULL,
    "name" VARCHAR(256) NOT NULL,
    "category" VARCHAR(256) NOT NULL,
    "description" VARCHAR(2000),
    "state" "TestState" NOT NULL DEFAULT 'ACTIVE',
    "definition_text" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "on_types" TEXT[],
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "metadata_test_pkey" PRIMARY KEY ("urn")
);

-- CreateTable
CREATE TABLE "task" (
    "id" TEXT NOT NULL,
    "type" "TaskType" NOT NULL,
    "state" "TaskState" NOT NULL DEFAULT 'waiting',
    "request" JSONB NOT NULL,
    "dedup_key" TEXT,
    "progress" JSONB NOT NULL DEFAULT '{}',
    "result" JSONB,
    "failed_reason" TEXT,
    "attempts_made" INTEGER NOT NULL DEFAULT 0,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "task_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_event" (
    "id" BIGSERIAL NOT NULL,
    "actor_urn" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_urn" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "access_token_token_hash_key" ON "access_token"("token_hash");

-- CreateIndex
CREATE INDEX "access_token_actor_urn_created_at_idx" ON "access_token"("actor_urn", "created_at" DESC);

-- CreateIndex
CREATE INDEX "access_token_owner_urn_created_at_idx" ON "access_token"("owner_urn", "created_at" DESC);

-- CreateIndex
CREATE INDEX "access_token_created_at_idx" ON "access_token"("created_at" DESC);

-- CreateIndex
CREATE INDEX "group_member_user_urn_idx" ON "group_member"("user_urn");

-- CreateIndex
CREATE INDEX "aspect_entity_type_idx" ON "aspect"("entity_type");

-- CreateIndex
CREATE INDEX "timeseries_aspect_urn_aspect_name_timestamp_millis_idx" ON "timeseries_aspect"("urn", "aspect_name", "timestamp_millis" DESC);

-- CreateIndex
CREATE INDEX "metadata_test_on_types_idx" ON "metadata_test" USING GIN ("on_types");

-- CreateIndex
CREATE INDEX "task_dedup_key_state_idx" ON "task"("dedup_key", "state");

-- CreateIndex
CREATE INDEX "task_created_at_idx" ON "task"("created_at" DESC);

-- CreateIndex
CREATE INDEX "audit_event_created_at_idx" ON "audit_event"("created_at" DESC);

-- CreateIndex
CREATE INDEX "audit_event_actor_urn_created_at_idx" ON "audit_event"("actor_urn", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "group_member" ADD CONSTRAINT "group_member_group_urn_fkey" FOREIGN KEY ("group_urn") REFERENCES "corp_group"("urn") ON DELETE CASCADE ON UPDATE CASCADE;
