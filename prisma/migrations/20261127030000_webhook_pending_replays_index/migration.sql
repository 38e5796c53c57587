-- Replay's bound counts a subscription's replayed deliveries still pending at every replay: by index, not a scan of
-- the subscription's whole delivery log.
CREATE INDEX "webhook_delivery_pending_replays_idx" ON "webhook_delivery"("subscription_id") WHERE (status = 'PENDING' AND generation > 0);
