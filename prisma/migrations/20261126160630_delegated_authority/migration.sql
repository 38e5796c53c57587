-- AlterTable
ALTER TABLE "access_token" ADD COLUMN     "parent_token_id" UUID;

-- AlterTable
ALTER TABLE "aspect" ADD COLUMN     "created_via" TEXT;

-- AlterTable
ALTER TABLE "metadata_test" ADD COLUMN     "owner_urn" TEXT,
ADD COLUMN     "owner_token_id" TEXT,
ADD COLUMN     "suspended_at" TIMESTAMPTZ(3),
ADD COLUMN     "suspended_reason" VARCHAR(512);

-- AlterTable
ALTER TABLE "retention_policy" ADD COLUMN     "owner_urn" TEXT,
ADD COLUMN     "owner_token_id" TEXT,
ADD COLUMN     "suspended_at" TIMESTAMPTZ(3),
ADD COLUMN     "suspended_reason" VARCHAR(512);

-- AlterTable
ALTER TABLE "task" ADD COLUMN     "created_via" TEXT;

-- Backfill: the owner of existing work is its creator (the only principal recorded until now)
UPDATE "metadata_test" SET "owner_urn" = "created_by";
ALTER TABLE "metadata_test" ALTER COLUMN "owner_urn" SET NOT NULL;
UPDATE "retention_policy" SET "owner_urn" = "created_by";
ALTER TABLE "retention_policy" ALTER COLUMN "owner_urn" SET NOT NULL;

-- CreateIndex
CREATE INDEX "access_token_parent_token_id_idx" ON "access_token"("parent_token_id");

-- CreateIndex
CREATE INDEX "metadata_test_owner_urn_idx" ON "metadata_test"("owner_urn");

-- CreateIndex
CREATE INDEX "retention_policy_owner_urn_idx" ON "retention_policy"("owner_urn");

-- CreateIndex
CREATE INDEX "task_created_via_idx" ON "task"("created_via") WHERE (created_via IS NOT NULL);
