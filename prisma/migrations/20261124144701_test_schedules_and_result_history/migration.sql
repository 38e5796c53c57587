-- AlterTable
ALTER TABLE "metadata_test" ADD COLUMN     "schedule_cron" VARCHAR(256);

-- CreateTable
CREATE TABLE "test_result_transition" (
    "id" BIGSERIAL NOT NULL,
    "urn" TEXT NOT NULL,
    "test_urn" TEXT NOT NULL,
    "passing" BOOLEAN NOT NULL,
    "previous" BOOLEAN,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "test_result_transition_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "test_result_transition_urn_test_urn_at_id_idx" ON "test_result_transition"("urn", "test_urn", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "test_result_transition_at_idx" ON "test_result_transition"("at");
