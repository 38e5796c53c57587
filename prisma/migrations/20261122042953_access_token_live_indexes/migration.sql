-- DropIndex
DROP INDEX "access_token_actor_urn_created_at_idx";

-- DropIndex
DROP INDEX "access_token_created_at_idx";

-- DropIndex
DROP INDEX "access_token_owner_urn_created_at_idx";

-- CreateIndex
CREATE INDEX "access_token_actor_urn_created_at_id_idx" ON "access_token"("actor_urn", "created_at" DESC, "id" DESC) WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_owner_urn_created_at_id_idx" ON "access_token"("owner_urn", "created_at" DESC, "id" DESC) WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_created_at_id_idx" ON "access_token"("created_at" DESC, "id" DESC) WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_actor_urn_expires_at_idx" ON "access_token"("actor_urn", "expires_at") WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_owner_urn_expires_at_idx" ON "access_token"("owner_urn", "expires_at") WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "access_token_expires_at_idx" ON "access_token"("expires_at") WHERE (revoked_at IS NULL);
