import type { Logger } from "@mdp/core";
import type { Queryable } from "@mdp/db";

const EVERY_MS = 10 * 60_000;
const CHUNK = 5_000;

/**
 * Every synchronous evaluation writes a task row (so a 504 can be followed with getTaskStatus). At hundreds of
 * evaluations a second the table would grow without end, so finished rows of synchronous evaluations are deleted once
 * they are older than the BullMQ job they describe is kept (a day). Background test runs are kept like truncations.
 * Several worker replicas may prune at once: SKIP LOCKED lets them share the work instead of waiting on each other.
 */
export class TaskRetention {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly logger: Logger,
    private readonly maxAgeHours = 24,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.prune(), EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Deletes old finished evaluation rows, a chunk per statement; returns how many went. */
  async prune(): Promise<number> {
    let total = 0;
    try {
      for (;;) {
        const { rowCount } = await this.db.query(
          `DELETE FROM task WHERE id IN (
             SELECT id FROM task
              WHERE type = 'EVALUATE_TESTS' AND request->>'kind' = 'evaluate'
                AND state IN ('completed', 'failed', 'cancelled')
                AND created_at < now() - make_interval(hours => $1)
              LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [this.maxAgeHours, CHUNK],
        );
        total += rowCount ?? 0;
        if ((rowCount ?? 0) < CHUNK) break;
      }
      if (total > 0) this.logger.info({ deleted: total }, "pruned finished evaluation task rows");
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, "could not prune evaluation task rows; will try again");
    }
    return total;
  }
}
