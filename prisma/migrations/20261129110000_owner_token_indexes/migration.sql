-- Every revocation of an access token looks up the work set through it (and through the tokens created with it) to
-- stop it: by index, not a scan of each table.
CREATE INDEX "metadata_test_owner_token_id_idx" ON "metadata_test"("owner_token_id");
CREATE INDEX "retention_policy_owner_token_id_idx" ON "retention_policy"("owner_token_id");
CREATE INDEX "webhook_subscription_owner_token_id_idx" ON "webhook_subscription"("owner_token_id");
