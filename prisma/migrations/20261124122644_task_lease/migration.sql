-- AlterTable
ALTER TABLE "task" ADD COLUMN     "lease_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "lease_owner" TEXT,
ADD COLUMN     "lease_token" TEXT;

-- CreateIndex
CREATE INDEX "task_lease_owner_idx" ON "task"("lease_owner") WHERE (state = 'active');
