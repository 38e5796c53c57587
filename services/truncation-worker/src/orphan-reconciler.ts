import type { Logger } from "@mdp/core";
import type { Database } from "@mdp/db";
import { truncatePayload, type Producer } from "@mdp/queues";

export const RECONCILE_INTERVAL_MS = 15_000;

/**
 * A waiting or active truncation task whose job is gone from Redis (Redis restarted without persistence, or its data
 * was lost) would otherwise wait forever. Every worker periodically re-queues such tasks under their own id: adding
 * a job id that exists is a no-op, and the handler resumes from the task row, so re-queueing is always safe.
 */
export class OrphanReconciler {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly producer: Producer<"truncate">,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const tick = () =>
      void this.reconcile().catch((error: unknown) => this.logger.warn({ err: error }, "reconcile failed"));
    tick();
    this.timer = setInterval(tick, RECONCILE_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Returns the ids of the tasks it re-queued. */
  async reconcile(): Promise<string[]> {
    const tasks = await this.db.prisma.task.findMany({
      where: { type: "TRUNCATE_TIMESERIES", state: { in: ["waiting", "active"] } },
      select: { id: true, request: true },
    });
    const requeued: string[] = [];
    for (const task of tasks) {
      if (await this.producer.queue.getJob(task.id)) continue;
      const payload = truncatePayload.omit({ trace: true }).safeParse({ ...(task.request as object), taskId: task.id });
      if (!payload.success) continue; // not a request this version can run; left for an operator to see
      await this.producer.enqueue(task.id, payload.data);
      requeued.push(task.id);
      this.logger.warn({ taskId: task.id }, "re-queued a truncation task whose job had vanished from Redis");
    }
    return requeued;
  }
}
