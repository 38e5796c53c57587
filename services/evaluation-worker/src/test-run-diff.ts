import { openRunDiff, recordRunDiffBatch } from "@mdp/db";
import type pg from "pg";

/**
 * What a run's diff keeps per list (newly failing, newly passing, flapping), at most: the first entities in urn order
 * up to this many and this many bytes of JSON; the list's count stays whole (docs/limits.md).
 */
export const RUN_DIFF_LIST_LIMITS = { entities: 100, bytes: 64 * 1024 } as const;

/** The run diff settings (libs/core config.ts, docs/scheduled-tests.md "What changed since the last run"). */
export interface RunDiffSettings {
  /** TEST_RUN_DIFF_FLAP_CHANGES: an entity flaps when it changed more than this many times in the window */
  flapChanges: number;
  /** TEST_RUN_DIFF_FLAP_RUNS: the window is the last this many runs of the test, this one included */
  flapRuns: number;
  /** TEST_RUN_DIFF_MAX_RUNS: the run diffs kept per test (the oldest go when a run starts) */
  maxRuns: number;
}

export const DEFAULT_RUN_DIFF_SETTINGS: RunDiffSettings = { flapChanges: 2, flapRuns: 5, maxRuns: 100 };

/**
 * Records, per run of a test that pushes, which entities it found newly failing, newly passing and flapping
 * (test_run_diff). It runs in each batch's transaction after the push recorded the batch's transitions, so the diff,
 * the results and the task's progress commit together: a retried attempt resumes with the diff exactly as far as
 * the results, and no entity is counted twice.
 *
 * "Newly" compares an entity's state after this run's push with its state at the run's baseline (the last batch of
 * the test's previous run, or just before this run when it is the first), read from the result history: a change
 * between the two runs (an evaluate push, a re-evaluation on change) counts, one undone before this run does not.
 */
export class TestRunDiffs {
  constructor(private readonly settings: RunDiffSettings = DEFAULT_RUN_DIFF_SETTINGS) {}

  async record(
    client: Pick<pg.ClientBase, "query">,
    run: { runId: string; testUrn: string },
    /** the batch: when it was evaluated, and the entities the run's test passed or failed (not those it did not apply to) */
    batch: { evaluatedAt: number; decided: readonly string[] },
  ): Promise<void> {
    const recorded = {
      runId: run.runId,
      urns: batch.decided,
      evaluatedAt: batch.evaluatedAt,
      limits: RUN_DIFF_LIST_LIMITS,
    };
    // After the run's first batch its row exists: the batch is the one statement (recordRunDiffBatch).
    if (await recordRunDiffBatch(client, recorded)) return;
    // Just before its first evaluation: the run's own transitions come after its start (the first run's baseline).
    await openRunDiff(client, { ...run, at: new Date(batch.evaluatedAt - 1), ...this.settings });
    await recordRunDiffBatch(client, recorded);
  }
}
