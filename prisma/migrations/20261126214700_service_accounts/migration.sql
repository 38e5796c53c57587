-- AlterEnum
ALTER TYPE "AccessTokenType" ADD VALUE 'SERVICE_ACCOUNT';

-- CreateTable
CREATE TABLE "service_account" (
    "urn" TEXT NOT NULL,
    "id" UUID NOT NULL,
    "display_name" VARCHAR(256),
    "description" VARCHAR(2000),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),
    "deleted_by" TEXT,

    CONSTRAINT "service_account_pkey" PRIMARY KEY ("urn")
);

-- CreateIndex
CREATE UNIQUE INDEX "service_account_id_key" ON "service_account"("id");

-- CreateIndex
CREATE INDEX "service_account_created_at_urn_idx" ON "service_account"("created_at" DESC, "urn") WHERE (deleted_at IS NULL);
