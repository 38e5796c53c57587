import { AppError, type Privilege } from "@mdp/core";
import { insertAuditEvent, suspendUnlessOwnerMay } from "@mdp/db";
import type { JobHandler, Payload } from "@mdp/queues";
import type { FiringDeps, FiringQueue, OwnedRow, ScheduleKind } from "./schedule-kind";
import { claimSlot } from "./schedule-slots";

/** What one firing did, kept as its job's result (Bull Board shows it). */
export type FiringOutcome =
  | { taskId: string; joined: boolean }
  | { skipped: string }
  | { suspended: Privilege[] }
  | { rateLimited: string }
  | { removalRequested: true };

/**
 * One firing of a schedule of `kind`, the same steps for every kind:
 * 1. the row, read now: gone or unscheduled, its leftover scheduler is handed to the schedule sync to remove;
 * 2. suspended: nothing starts and nothing is written until someone who may resumes it; idle (an INACTIVE test): the
 *    same, without a suspension;
 * 3. the owner's current privileges (ownerPrivilegesReader, through the token the owner set the work with): when it
 *    lacks what the kind needs, the work is suspended (the kind's audit action, a warning) and starts nothing;
 * 4. the kind's per-actor limit, counted against the owner as its own call would be: over it, an audit row and nothing
 *    else;
 * 5. the kind's task, created for the owner (deduplicated, audited in its transaction) and queued.
 */
export async function fireSchedule<Row extends OwnedRow, Q extends FiringQueue>(
  kind: ScheduleKind<Row, Q>,
  id: string,
  deps: FiringDeps,
): Promise<FiringOutcome> {
  const row = await kind.load(deps.db.prisma, id);
  if (!row || kind.cronOf(row) === null) {
    await deps.sync.request(kind.name, id);
    deps.logger.info({ kind: kind.name, id }, `${kind.label} is gone or unscheduled: asked to remove its schedule`);
    return { removalRequested: true };
  }
  if (row.suspendedAt !== null) return { skipped: "SUSPENDED" };
  const idle = kind.idle?.(row);
  if (idle !== undefined) return { skipped: idle };
  const urn = kind.urnOf(row, deps.urnNamespace);
  const ownerUrn = row.ownerUrn;
  const check = await suspendUnlessOwnerMay(deps.db.prisma, {
    work: kind.work(row, urn),
    ownerUrn,
    ownerTokenId: row.ownerTokenId,
    needs: kind.needs(row),
    rootUserUrn: deps.rootUserUrn,
    action: kind.suspendedAction,
    via: kind.via,
  });
  if (!check.mayRun) {
    if (check.suspended) {
      deps.logger.warn(
        { kind: kind.name, target: urn, owner: ownerUrn, missingPrivileges: check.missing },
        `${kind.label} suspended: its owner no longer holds what it needs`,
      );
    }
    return { suspended: check.missing };
  }
  if (kind.rateLimit) {
    const limited = await overLimit(deps, kind.rateLimit.limit, ownerUrn);
    if (limited) {
      await insertAuditEvent(deps.db.prisma, {
        actorUrn: ownerUrn,
        action: kind.rateLimit.action,
        targetUrn: urn,
        details: { ...limited, trigger: "schedule", via: kind.via },
      });
      deps.logger.warn(
        { kind: kind.name, target: urn, owner: ownerUrn, ...limited },
        `${kind.label} over its owner's limit`,
      );
      return { rateLimited: limited.limit };
    }
  }
  const { taskId, existing } = await kind.create(row, urn, deps);
  deps.logger.info({ kind: kind.name, target: urn, taskId, joined: existing }, `${kind.label} fired`);
  return { taskId, joined: existing };
}

/**
 * The job handler of a kind's firing queue: each job is one firing of one of its schedules, for the cron slot it
 * stands for. That slot is claimed first (schedule_slot): a slot already run (its scheduler's firing, and a late one
 * the sync queued after Redis lost its data) starts nothing, and the slots skipped since the last one claimed are
 * counted on the schedule (`missedRuns`) and audited (the kind's `missedAction`). Then fireSchedule.
 */
export function firingHandler<Row extends OwnedRow, Q extends FiringQueue>(
  kind: ScheduleKind<Row, Q>,
  deps: FiringDeps,
): JobHandler<Q> {
  return async (payload: Payload<Q>) => {
    const id = kind.idOf(payload);
    const row = await kind.load(deps.db.prisma, id);
    const cron = row ? kind.cronOf(row) : null;
    if (row && cron !== null) {
      const slot = await claimSlot(deps.db.prisma, kind.name, id, cron);
      if (!slot.claimed) return { skipped: "SLOT_ALREADY_RAN" };
      if (slot.missed > 0) await recordMissed(kind, row, slot, deps);
    }
    return fireSchedule(kind, id, deps);
  };
}

/** The audit row and warning of slots that passed without a firing before the one now run, late. */
async function recordMissed<Row extends OwnedRow, Q extends FiringQueue>(
  kind: ScheduleKind<Row, Q>,
  row: Row,
  slot: { slotAt: number; missed: number },
  deps: FiringDeps,
): Promise<void> {
  const urn = kind.urnOf(row, deps.urnNamespace);
  const missed = { missed: slot.missed, ranFor: new Date(slot.slotAt).toISOString(), via: kind.via };
  await insertAuditEvent(deps.db.prisma, {
    actorUrn: row.ownerUrn,
    action: kind.missedAction,
    targetUrn: urn,
    details: missed,
  });
  deps.logger.warn(
    { kind: kind.name, target: urn, ...missed },
    `${kind.label}: slots passed without a firing (its schedule was lost or no worker ran); ran once, late`,
  );
}

/** The owner's limit, counted for this firing: what the refusal says when it is spent, else undefined. */
async function overLimit(
  deps: FiringDeps,
  limit: NonNullable<ScheduleKind["rateLimit"]>["limit"],
  ownerUrn: string,
): Promise<{ limit: string; perMinute: number } | undefined> {
  if (!deps.rateLimits) return undefined;
  try {
    await deps.rateLimits.consume({ urn: ownerUrn }, limit);
    return undefined;
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== "TOO_MANY_REQUESTS") throw error;
    const { limit: name, perMinute } = error.details as { limit: string; perMinute: number };
    return { limit: name, perMinute };
  }
}
