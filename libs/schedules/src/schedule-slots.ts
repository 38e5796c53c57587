import { advanceScheduleSlot, findScheduleSlot, type PrismaClient } from "@mdp/db";
import { cronSlotsBetween, previousCronSlot } from "@mdp/queues";

/** A firing delivered this much before its slot (clocks of processes and Redis) still counts for that slot. */
const EARLY_FIRING_MS = 1_000;

/**
 * A slot that passed this long ago without its firing is run late by the periodic full sync; a younger one is left to
 * its own job scheduler's firing, unless the sync had to restore that scheduler (Redis lost it: the firing is lost
 * too). The sync's every-minute firing shares its second with every minute's cron slot, hence a margin.
 */
export const LATE_AFTER_MS = 30_000;

export type SlotClaim = { claimed: true; slotAt: number; missed: number } | { claimed: false; slotAt: number };

/**
 * Claims the slot a firing of a schedule stands for — the latest of its cron at or before now — so that each slot
 * runs once whichever job brought it (its job scheduler's, or a late one), and counts the slots since the last one
 * claimed that never ran. A schedule seen for the first time, or with another cron, starts from this slot.
 */
export async function claimSlot(
  prisma: PrismaClient,
  kind: string,
  id: string,
  cron: string,
  now = Date.now(),
): Promise<SlotClaim> {
  const slotAt = previousCronSlot(cron, now + EARLY_FIRING_MS) ?? now;
  for (let attempt = 0; attempt < 3; attempt++) {
    const seen = await findScheduleSlot(prisma, kind, id);
    const sameCron = seen?.cron === cron;
    if (seen && sameCron && seen.lastSlotAt.getTime() >= slotAt) return { claimed: false, slotAt };
    const missed = seen && sameCron ? cronSlotsBetween(cron, seen.lastSlotAt.getTime(), slotAt) : 0;
    if (await advanceScheduleSlot(prisma, kind, id, seen, { cron, slotAt: new Date(slotAt), missed })) {
      return { claimed: true, slotAt, missed };
    }
  }
  return { claimed: false, slotAt };
}
