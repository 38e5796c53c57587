-- AlterTable
ALTER TABLE "task" ADD COLUMN     "reply" JSONB;
