import type { Logger } from "@mdp/core";
import type { Database } from "@mdp/db";
import { Producer, SCHEDULE_KIND_NAMES, type Chore, type RedisConnection, type ScheduleKindName } from "@mdp/queues";
import type { FiringQueue, OwnedRow, ScheduleKind } from "./schedule-kind";
import { scheduleKind } from "./schedule-kinds";

/** How often the whole of every kind's schedulers is made to match the rows (the `sync-all-schedules` chore). */
export const FULL_SYNC_EVERY_MS = 60_000;

/**
 * The one writer of the schedules' BullMQ job schedulers. The rows are the source of truth; nothing else upserts or
 * removes a schedule's scheduler: the gateway writes a row and asks for a `sync-schedule` job, a firing that finds
 * its row gone asks the same, and the `sync-all-schedules` chore (a job scheduler of its own, every minute) makes
 * every kind's schedulers match every row, which converges whatever a refused request left behind. All of it runs
 * as jobs of the schedule-sync queue, whose global concurrency is 1: one sync at a time in the whole cluster, so a
 * full sync that read the rows never races a single one that read them later.
 */
export class ScheduleSync {
  private readonly queues = new Map<ScheduleKindName, Producer<FiringQueue>>();

  constructor(
    private readonly db: Database,
    connection: RedisConnection,
    prefix: string,
    private readonly logger: Logger,
  ) {
    for (const name of SCHEDULE_KIND_NAMES) {
      this.queues.set(name, new Producer(scheduleKind(name).firingQueue, connection, prefix));
    }
  }

  private schedulesOf(kind: ScheduleKind<OwnedRow, FiringQueue>) {
    return kind.schedules(this.queues.get(kind.name)!.queue);
  }

  /** Makes one schedule's scheduler follow its row: upserted with its cron, or removed with the row or its cron. */
  async syncOne(name: ScheduleKindName, id: string): Promise<{ upserted: number; removed: number }> {
    const kind = scheduleKind(name);
    const schedules = this.schedulesOf(kind);
    const row = await kind.load(this.db.prisma, id);
    const cron = row ? kind.cronOf(row) : null;
    if (cron === null) return { upserted: 0, removed: (await schedules.remove(kind.scheduleId(id))) ? 1 : 0 };
    await schedules.upsert({ id: kind.scheduleId(id), cron });
    return { upserted: 1, removed: 0 };
  }

  /** Makes every kind's schedulers match its rows; logs `<label> schedules reconciled` for a kind it changed. */
  async syncAll(): Promise<Record<string, { upserted: number; removed: number }>> {
    const counts: Record<string, { upserted: number; removed: number }> = {};
    for (const name of SCHEDULE_KIND_NAMES) {
      const kind = scheduleKind(name);
      const rows = await kind.list(this.db.prisma);
      const done = await this.schedulesOf(kind).reconcile(
        rows.map((r) => ({ id: kind.scheduleId(r.id), cron: r.cron })),
      );
      if (done.upserted + done.removed > 0)
        this.logger.info({ kind: name, ...done }, `${kind.label} schedules reconciled`);
      counts[name] = done;
    }
    return counts;
  }

  /** The schedule-sync queue's chores: one schedule on request, every schedule every FULL_SYNC_EVERY_MS. */
  chores(fullSyncEveryMs = FULL_SYNC_EVERY_MS): Array<Chore<"scheduleSync">> {
    return [
      {
        name: "sync-schedule",
        run: async ({ scheduleKind: name, id }) =>
          name !== undefined && id !== undefined ? { [name]: await this.syncOne(name, id) } : this.syncAll(),
      },
      { name: "sync-all-schedules", everyMs: fullSyncEveryMs, run: () => this.syncAll() },
    ];
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
