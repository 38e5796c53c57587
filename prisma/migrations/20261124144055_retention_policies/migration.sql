-- CreateTable
CREATE TABLE "retention_policy" (
    "id" UUID NOT NULL,
    "entity_type" VARCHAR(256) NOT NULL,
    "aspect" VARCHAR(256) NOT NULL,
    "retain_days" INTEGER NOT NULL,
    "cron" VARCHAR(256) NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "last_task_id" TEXT,

    CONSTRAINT "retention_policy_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "retention_policy_created_at_id_idx" ON "retention_policy"("created_at" DESC, "id" DESC);
