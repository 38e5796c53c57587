-- CreateTable
CREATE TABLE "test_run_diff" (
    "run_id" TEXT NOT NULL,
    "test_urn" TEXT NOT NULL,
    "previous_run_id" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "baseline_at" TIMESTAMPTZ(3) NOT NULL,
    "flap_since" TIMESTAMPTZ(3) NOT NULL,
    "flap_changes" INTEGER NOT NULL,
    "flap_runs" INTEGER NOT NULL,
    "last_batch_at" TIMESTAMPTZ(3),
    "evaluated" INTEGER NOT NULL DEFAULT 0,
    "newly_failing_count" INTEGER NOT NULL DEFAULT 0,
    "newly_passing_count" INTEGER NOT NULL DEFAULT 0,
    "flapping_count" INTEGER NOT NULL DEFAULT 0,
    "newly_failing" JSONB NOT NULL DEFAULT '[]',
    "newly_passing" JSONB NOT NULL DEFAULT '[]',
    "flapping" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "test_run_diff_pkey" PRIMARY KEY ("run_id")
);

-- CreateIndex
CREATE INDEX "test_run_diff_test_urn_started_at_idx" ON "test_run_diff"("test_urn", "started_at" DESC);

-- CreateIndex
CREATE INDEX "test_run_diff_started_at_idx" ON "test_run_diff"("started_at");
