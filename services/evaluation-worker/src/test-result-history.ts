import { pruneInBatches } from "@mdp/core";
import { insertTransitions, pruneRunDiffs, pruneTransitions, type PushedResult } from "@mdp/db";
import type { TestResultsAspect } from "@mdp/metadata-tests";
import type pg from "pg";
import type { PushItem } from "./results.pusher";

/** What each (entity, test) pair's history keeps at most (TEST_HISTORY_MAX_TRANSITIONS) unless told otherwise. */
export const DEFAULT_MAX_TRANSITIONS_PER_PAIR = 1_000;

/**
 * The history of pushed results (`test_result_transition`, docs/scheduled-tests.md "Reading the history"): per (entity, test), the
 * first result and every pass→fail or fail→pass after it, each with the time of the evaluation that showed it. A
 * result that repeats the pair's last recorded state adds nothing, so the table grows with changes, not with runs.
 *
 * `record` runs inside the push's transaction, after the testResults aspects are merged and while the push holds
 * their write locks: pushes for one entity serialize, so comparing with the pair's last row and inserting cannot race.
 * Each insert also trims its pair to `maxPerPair` rows (the oldest go). Times never go backwards within a pair: a
 * worker whose clock lags records the previous row's time instead.
 */
export class TestResultHistory {
  constructor(private readonly maxPerPair = DEFAULT_MAX_TRANSITIONS_PER_PAIR) {}

  /**
   * Records the final state of each (entity, test) this push evaluated and stored (`stored`: the entities' testResults
   * after the push). Tests that were evaluated but did not apply, or whose result does not stand, record nothing.
   * Returns how many transitions were written.
   */
  async record(
    client: Pick<pg.ClientBase, "query">,
    items: readonly PushItem[],
    stored: ReadonlyMap<string, TestResultsAspect>,
  ): Promise<number> {
    const latest = new Map<string, { urn: string; test: string; passing: boolean; at: number }>();
    for (const item of items) {
      const urn = item.evaluation.urn;
      const results = stored.get(urn);
      if (!results) continue;
      for (const test of item.evaluated) {
        // An entity's entries are few (one per test that has results on it): a scan, not a Set built per item.
        const passing = results.passing.some((r) => r.test === test);
        if (!passing && !results.failing.some((r) => r.test === test)) continue;
        const key = `${urn}\u0000${test}`;
        const at = Math.max(item.evaluation.evaluatedAt, latest.get(key)?.at ?? 0);
        latest.set(key, { urn, test, passing, at });
      }
    }
    return this.recordResults(client, [...latest.values()]);
  }

  /** Records these results, each the final state of its (entity, test) after a push (at most one per pair). */
  async recordResults(client: Pick<pg.ClientBase, "query">, results: readonly PushedResult[]): Promise<number> {
    if (results.length === 0) return 0;
    // Only pairs that just grew can be over the cap: the same statement trims them.
    return insertTransitions(client, results, this.maxPerPair);
  }
}

/** Rows deleted per statement by the retention: each statement's locks and WAL stay small. */
const PRUNE_BATCH = 5_000;
/** How often the `prune-test-history` chore runs (once per cluster). */
export const HISTORY_PRUNE_EVERY_MS = 10 * 60_000;

/**
 * TEST_HISTORY_RETENTION_DAYS: at each firing of the `prune-test-history` chore (every 10 minutes, one evaluation
 * worker of the cluster), and when `prune` is called, transitions are deleted
 * older than the retention, except the latest of each pair whose test still exists — that row says since when the
 * entity has been in its current state, which stays answerable however long ago it changed. The latest rows of
 * deleted tests go with age like the rest. Run diffs (test-run-diff.ts) that started before the retention go too. A
 * prune by hand and a firing share the work (SKIP LOCKED).
 */
export class TestHistoryRetention {
  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
    private readonly retentionDays: number,
    private readonly budgetMs = 20_000,
  ) {}

  /**
   * Deletes what the retention allows, a batch per statement, until caught up or the budget (shared by the two
   * tables) is spent; returns how many rows went. A failing statement fails the call, and so the chore's firing.
   */
  async prune(): Promise<number> {
    const until = Date.now() + this.budgetMs;
    const transitions = await pruneInBatches((batch) => pruneTransitions(this.pool, this.retentionDays, batch), {
      budgetMs: this.budgetMs,
      batch: PRUNE_BATCH,
    });
    const runDiffs = await pruneInBatches((batch) => pruneRunDiffs(this.pool, this.retentionDays, batch), {
      budgetMs: Math.max(0, until - Date.now()),
      batch: PRUNE_BATCH,
    });
    return transitions + runDiffs;
  }
}
