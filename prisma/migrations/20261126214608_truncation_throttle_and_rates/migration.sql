-- AlterTable
ALTER TABLE "task" ADD COLUMN     "rows_per_second" INTEGER;

-- CreateTable
CREATE TABLE "truncation_rate" (
    "kind" TEXT NOT NULL,
    "units_per_second" DOUBLE PRECISION NOT NULL,
    "samples" INTEGER NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "truncation_rate_pkey" PRIMARY KEY ("kind")
);
