import type { Logger } from "@mdp/core";
import { listScheduleSlots, pruneScheduleSlots, type Database } from "@mdp/db";
import {
  previousCronSlot,
  Producer,
  SCHEDULE_KIND_NAMES,
  type Chore,
  type RedisConnection,
  type ScheduleKindName,
} from "@mdp/queues";
import type { FiringQueue, OwnedRow, ScheduleKind } from "./schedule-kind";
import { scheduleKind } from "./schedule-kinds";
import { LATE_AFTER_MS } from "./schedule-slots";

type SyncCounts = { upserted: number; removed: number; late: number };

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

  /**
   * Makes every kind's schedulers match its rows, then queues a late firing for each schedule whose latest slot passed
   * without one (catchUp); logs `<label> schedules reconciled` for a kind it changed.
   */
  async syncAll(): Promise<Record<string, SyncCounts>> {
    const counts: Record<string, SyncCounts> = {};
    for (const name of SCHEDULE_KIND_NAMES) {
      const kind = scheduleKind(name);
      const rows = await kind.list(this.db.prisma);
      const { upserted, removed, upsertedIds } = await this.schedulesOf(kind).reconcile(
        rows.map((r) => ({ id: kind.scheduleId(r.id), cron: r.cron })),
      );
      const late = await this.catchUp(kind, rows, new Set(upsertedIds));
      const done = { upserted, removed, late };
      if (upserted + removed + late > 0)
        this.logger.info({ kind: name, ...done }, `${kind.label} schedules reconciled`);
      counts[name] = done;
    }
    return counts;
  }

  /**
   * A slot never skips silently: each schedule whose latest slot is later than the last one a firing claimed
   * (schedule_slot) gets one firing now, late — at once when its scheduler had to be restored (Redis lost it, and the
   * firing with it), else once the slot is LATE_AFTER_MS old (its own firing may be on its way). The firing claims
   * the slot, so it runs once however many syncs ask, and counts the slots before it that could not run. A schedule
   * with no slot claimed under its cron is left to its first firing; the rows of schedules gone are deleted.
   */
  private async catchUp(
    kind: ScheduleKind<OwnedRow, FiringQueue>,
    rows: ReadonlyArray<{ id: string; cron: string }>,
    restored: ReadonlySet<string>,
  ): Promise<number> {
    const now = Date.now();
    const slots = new Map((await listScheduleSlots(this.db.prisma, kind.name)).map((s) => [s.scheduleId, s]));
    let late = 0;
    for (const row of rows) {
      const seen = slots.get(row.id);
      // No slot claimed under this cron yet: its first firing starts the record (nothing before it counts as missed).
      if (!seen || seen.cron !== row.cron) continue;
      const slotAt = previousCronSlot(row.cron, now);
      if (slotAt === undefined || seen.lastSlotAt.getTime() >= slotAt) continue;
      const scheduleId = kind.scheduleId(row.id);
      if (!restored.has(scheduleId) && slotAt > now - LATE_AFTER_MS) continue;
      await this.schedulesOf(kind).fireLate(scheduleId, slotAt);
      this.logger.warn(
        { kind: kind.name, id: row.id, slot: new Date(slotAt).toISOString() },
        `${kind.label}: its latest slot passed without a firing; running it late`,
      );
      late++;
    }
    await pruneScheduleSlots(
      this.db.prisma,
      kind.name,
      rows.map((r) => r.id),
    );
    return late;
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
