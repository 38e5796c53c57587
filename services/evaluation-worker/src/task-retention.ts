import type { Logger } from "@mdp/core";
import type { EvaluationLifecycle } from "@mdp/tasks";

/** How often the `prune-evaluation-tasks` chore runs (once per cluster). */
export const TASK_PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Every synchronous evaluation writes a task row (so a 504 can be followed with getTaskStatus). At hundreds of
 * evaluations a second the table would grow without end, so finished rows of synchronous evaluations are deleted once
 * they are older than the BullMQ job they describe is kept (a day). Background test runs are kept like truncations.
 * One worker of the cluster prunes per firing of the `prune-evaluation-tasks` chore; SKIP LOCKED still lets a prune
 * by hand and a firing share the work rather than wait on each other.
 */
export class TaskRetention {
  constructor(
    private readonly evaluations: EvaluationLifecycle,
    private readonly logger: Logger,
    private readonly maxAgeHours = 24,
  ) {}

  /** Deletes old finished evaluation rows, a chunk per statement; returns how many went. */
  async prune(): Promise<number> {
    let total = 0;
    try {
      total = await this.evaluations.pruneFinished(this.maxAgeHours);
      if (total > 0) this.logger.info({ deleted: total }, "pruned finished evaluation task rows");
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, "could not prune evaluation task rows; will try again");
    }
    return total;
  }
}
