-- AlterTable
ALTER TABLE "access_token" ADD COLUMN     "scopes" TEXT[] DEFAULT ARRAY[]::TEXT[];
