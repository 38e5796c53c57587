-- Retention's index of the result history by age becomes a BRIN index: rows arrive in time order, so block ranges
-- serve the prune as well, at a fraction of the size and of a push's insert cost. And a btree on `at` alone gave the
-- planner a wrong way to the run diff's per-entity reads: under statistics taken while a test had few rows, it walked
-- the whole history before a run's baseline backwards for every entity of a batch (about 0.5 s per batch of 1,000)
-- instead of the pair's own index. A BRIN index cannot give an order, so that plan no longer exists.
DROP INDEX "test_result_transition_at_idx";

CREATE INDEX "test_result_transition_at_idx" ON "test_result_transition" USING BRIN ("at");
