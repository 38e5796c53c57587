import type { PrismaClient } from "../generated/prisma/client";

/**
 * The `schedule_slot` rows (docs/scheduled-tests.md "When Redis loses its data"): per schedule, the last cron slot a
 * firing handled. A firing claims its slot here before it does anything, so a slot runs at most once whichever job
 * brought it (its job scheduler's, or a late one the schedule sync queued), and the slots skipped since the last one
 * claimed are counted in `missed_runs`.
 */
export interface ScheduleSlotRow {
  scheduleId: string;
  cron: string;
  lastSlotAt: Date;
  missedRuns: number;
  lastMissedAt: Date | null;
}

export async function findScheduleSlot(
  prisma: PrismaClient,
  kind: string,
  scheduleId: string,
): Promise<ScheduleSlotRow | null> {
  return prisma.scheduleSlot.findUnique({
    where: { kind_scheduleId: { kind, scheduleId } },
    select: { scheduleId: true, cron: true, lastSlotAt: true, missedRuns: true, lastMissedAt: true },
  });
}

/** A kind's slot rows: all of them, or those of `ids`. */
export async function listScheduleSlots(
  prisma: PrismaClient,
  kind: string,
  ids?: readonly string[],
): Promise<ScheduleSlotRow[]> {
  return prisma.scheduleSlot.findMany({
    where: { kind, ...(ids && { scheduleId: { in: [...ids] } }) },
    select: { scheduleId: true, cron: true, lastSlotAt: true, missedRuns: true, lastMissedAt: true },
  });
}

/**
 * Moves a schedule's last slot from `seen` (what the caller read: null when it had no row) to `slotAt`, adding
 * `missed` skipped slots; true when this caller moved it, false when another did first (it read a stale row). A row
 * of another cron takes the new one with no missed slots added: a new cron starts from its own slot.
 */
export async function advanceScheduleSlot(
  prisma: PrismaClient,
  kind: string,
  scheduleId: string,
  seen: Pick<ScheduleSlotRow, "cron" | "lastSlotAt"> | null,
  next: { cron: string; slotAt: Date; missed: number },
): Promise<boolean> {
  if (seen === null) {
    const inserted = await prisma.scheduleSlot.createMany({
      data: [{ kind, scheduleId, cron: next.cron, lastSlotAt: next.slotAt }],
      skipDuplicates: true,
    });
    return inserted.count === 1;
  }
  const sameCron = seen.cron === next.cron;
  const moved = await prisma.scheduleSlot.updateMany({
    where: { kind, scheduleId, cron: seen.cron, lastSlotAt: seen.lastSlotAt },
    data: {
      cron: next.cron,
      lastSlotAt: next.slotAt,
      ...(sameCron && next.missed > 0 && { missedRuns: { increment: next.missed }, lastMissedAt: next.slotAt }),
    },
  });
  return moved.count === 1;
}

/** Deletes the slots of a kind's schedules that are gone (not in `keep`); returns how many went. */
export async function pruneScheduleSlots(prisma: PrismaClient, kind: string, keep: readonly string[]): Promise<number> {
  const gone = await prisma.scheduleSlot.deleteMany({ where: { kind, scheduleId: { notIn: [...keep] } } });
  return gone.count;
}
