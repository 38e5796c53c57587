-- CreateIndex
CREATE INDEX "audit_event_action_created_at_idx" ON "audit_event"("action", "created_at" DESC);

-- CreateIndex
CREATE INDEX "audit_event_target_urn_created_at_idx" ON "audit_event"("target_urn", "created_at" DESC);

-- CreateIndex
CREATE INDEX "task_created_by_created_at_id_idx" ON "task"("created_by", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "task_state_created_at_id_idx" ON "task"("state", "created_at" DESC, "id" DESC);
