import { every, type Logger, type PeriodicLoop } from "@mdp/core";
import type { EvaluationTasks } from "@mdp/tasks";

const EVERY_MS = 10 * 60_000;

/**
 * Every synchronous evaluation writes a task row (so a 504 can be followed with getTaskStatus). At hundreds of
 * evaluations a second the table would grow without end, so finished rows of synchronous evaluations are deleted once
 * they are older than the BullMQ job they describe is kept (a day). Background test runs are kept like truncations.
 * Several worker replicas may prune at once: SKIP LOCKED lets them share the work instead of waiting on each other.
 */
export class TaskRetention {
  private loop: PeriodicLoop | undefined;

  constructor(
    private readonly evaluations: EvaluationTasks,
    private readonly logger: Logger,
    private readonly maxAgeHours = 24,
  ) {}

  start(): void {
    this.loop = every("task-retention", EVERY_MS, async () => ({ deleted: await this.prune() }), {
      logger: this.logger,
    });
  }

  /** No prune starts after it (one in flight finishes on its own). */
  stop(): void {
    void this.loop?.stop();
  }

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
