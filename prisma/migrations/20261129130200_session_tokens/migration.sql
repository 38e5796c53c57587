-- SESSION tokens (DataHub's frontend signing users in): a value of the token type. The list's count indexes end with
-- the type, so a list leaves sessions out with index-only scans still.
-- AlterEnum
ALTER TYPE "AccessTokenType" ADD VALUE 'SESSION';

-- DropIndex
DROP INDEX "access_token_actor_urn_expires_at_idx";

-- DropIndex
DROP INDEX "access_token_expires_at_idx";

-- DropIndex
DROP INDEX "access_token_owner_urn_expires_at_idx";

-- CreateIndex
CREATE INDEX "access_token_actor_urn_expires_at_type_idx" ON "access_token"("actor_urn", "expires_at", "type") WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_owner_urn_expires_at_type_idx" ON "access_token"("owner_urn", "expires_at", "type") WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_expires_at_type_idx" ON "access_token"("expires_at", "type") WHERE (revoked_at IS NULL);
