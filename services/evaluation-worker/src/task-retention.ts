import { pruneInBatches } from "@mdp/core";
import type { EvaluationLifecycle } from "@mdp/tasks";

/** How often the `prune-evaluation-tasks` chore runs (once per cluster). */
export const TASK_PRUNE_EVERY_MS = 10 * 60_000;

/** Rows one delete statement takes: each statement's locks and WAL stay small. */
const BATCH = 5_000;

/**
 * Every synchronous evaluation writes a task row (so a 504 can be followed with getTaskStatus). At hundreds of
 * evaluations a second the table would grow without end, so finished rows of synchronous evaluations are deleted once
 * they are older than the BullMQ job they describe is kept (a day). Background test runs are kept like truncations.
 * One worker of the cluster prunes per firing of the `prune-evaluation-tasks` chore; SKIP LOCKED still lets a prune
 * by hand and a firing share the work rather than wait on each other.
 */
export class TaskRetention {
  constructor(
    private readonly evaluations: Pick<EvaluationLifecycle, "pruneFinishedBatch">,
    private readonly maxAgeHours = 24,
    private readonly budgetMs = 20_000,
  ) {}

  /**
   * Deletes old finished evaluation rows, a batch per statement, until caught up or the budget is spent; returns how
   * many went. A failing statement fails the call (and so the chore's firing).
   */
  prune(): Promise<number> {
    return pruneInBatches((limit) => this.evaluations.pruneFinishedBatch(this.maxAgeHours, limit), {
      budgetMs: this.budgetMs,
      batch: BATCH,
    });
  }
}
