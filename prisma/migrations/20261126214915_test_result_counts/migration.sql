-- CreateIndex
CREATE INDEX "test_result_transition_test_urn_urn_at_id_idx" ON "test_result_transition"("test_urn", "urn", "at" DESC, "id" DESC);
