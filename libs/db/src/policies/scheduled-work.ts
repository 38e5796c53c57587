import { conflict, SYSTEM_ACTOR_URN, type Privilege } from "@mdp/core";
import { insertEntityChangeEvents, scheduleSuspendEvent } from "../events/entity-change-events";
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import { insertAuditEvent } from "../audit";
import { ownerPrivilegesReader } from "./grants";

/**
 * Deferred work that runs by itself for its owner (docs/scheduled-tests.md "Who a schedule acts for"): a scheduled
 * test (metadata_test, by urn) or a retention policy (retention_policy, by id). The owner is whoever last set what it
 * does; each firing acts with the owner's current privileges, and is suspended when the owner lacks them.
 */
export type ScheduledWork =
  { kind: "SCHEDULED_TEST"; urn: string } | { kind: "RETENTION_POLICY"; id: string; urn: string };

/** The longest suspension reason stored (the column's size). */
export const MAX_SUSPENDED_REASON = 512;

/**
 * Serializes, per owner, the writes that may add to the schedules a user owns: the first statement of such a
 * transaction, so that two concurrent creations cannot both pass `requireScheduleRoom` for the last place.
 */
export async function lockScheduleOwner(tx: Prisma.TransactionClient, ownerUrn: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`schedule-owner:${ownerUrn}`}))`;
}

/** How many schedules the user owns: its scheduled tests (suspended or not) and its retention policies. */
export async function schedulesOwnedBy(tx: Prisma.TransactionClient, ownerUrn: string): Promise<number> {
  const [row] = await tx.$queryRaw<Array<{ owned: number }>>`
    SELECT ((SELECT count(*) FROM metadata_test WHERE owner_urn = ${ownerUrn} AND schedule_cron IS NOT NULL)
          + (SELECT count(*) FROM retention_policy WHERE owner_urn = ${ownerUrn}))::int AS owned`;
  return row?.owned ?? 0;
}

/**
 * Refuses (409 naming the limit and its setting) a write that would make `ownerUrn` own one more schedule than
 * `max` (MAX_SCHEDULES_PER_USER). Call after `lockScheduleOwner`, before the write, for work the user does not own
 * yet as a schedule.
 */
export async function requireScheduleRoom(tx: Prisma.TransactionClient, ownerUrn: string, max: number): Promise<void> {
  const owned = await schedulesOwnedBy(tx, ownerUrn);
  if (owned >= max) {
    throw conflict(
      `${ownerUrn} already owns ${owned} schedules (scheduled tests and retention policies), the limit of ${max} ` +
        `(MAX_SCHEDULES_PER_USER); delete or unschedule one first.`,
    );
  }
}

/**
 * Refuses (409 naming the limit and its setting) a write that would make `ownerUrn` own one more test that evaluates on
 * change than `max` (MAX_ON_CHANGE_TESTS_PER_USER). Call after `lockScheduleOwner` (the owner's lock for all its
 * automatic work), before the write, for a test the user does not own yet with evaluation on change.
 */
export async function requireOnChangeRoom(tx: Prisma.TransactionClient, ownerUrn: string, max: number): Promise<void> {
  const [row] = await tx.$queryRaw<Array<{ owned: number }>>`
    SELECT count(*)::int AS owned FROM metadata_test WHERE owner_urn = ${ownerUrn} AND evaluate_on_change`;
  const owned = row?.owned ?? 0;
  if (owned >= max) {
    throw conflict(
      `${ownerUrn} already owns ${owned} tests that evaluate on change, the limit of ${max} ` +
        `(MAX_ON_CHANGE_TESTS_PER_USER); set evaluateOnChange: false on this one or on another first.`,
    );
  }
}

export interface FiringCheck {
  work: ScheduledWork;
  ownerUrn: string;
  /** the token the owner set the work through: the firing is bounded by its chain (ownerPrivilegesReader) */
  ownerTokenId: string | null;
  /** what the firing needs of its owner (each with what implies it) */
  needs: readonly Privilege[];
  rootUserUrn: string;
  /** the suspension's audit action, e.g. `test.schedule.suspended` */
  action: string;
  /** the audit's `via`: which kind of schedule fired */
  via: string;
  /** the audit's `trigger`: `schedule` unless told (evaluation on change: `change`) */
  trigger?: string;
}

/**
 * Before a schedule acts for its owner: whether the owner, through the token it set the work with, holds everything
 * it needs now (read from PostgreSQL, uncached: ownerPrivilegesReader). When it does not, the work is suspended — `suspended_at`, `suspended_reason` and the audit row (actor the
 * owner, details naming the missing privileges) in one transaction — and the answer lists what is missing; the caller
 * starts nothing. The update matches the owner it was read with and only unsuspended work, so an edit that changed the
 * owner meanwhile, or a firing that suspended it first, is left alone (no second row).
 */
export async function suspendUnlessOwnerMay(
  prisma: PrismaClient,
  check: FiringCheck,
): Promise<{ mayRun: true } | { mayRun: false; missing: Privilege[]; suspended: boolean }> {
  const grants = await ownerPrivilegesReader(
    prisma,
    check.rootUserUrn,
  )({ urn: check.ownerUrn, tokenId: check.ownerTokenId, suspended: false });
  const missing = check.needs.filter((p) => !grants.has(p));
  if (missing.length === 0) return { mayRun: true };
  const reason = `Its owner ${check.ownerUrn} no longer holds ${missing.join(", ")}.`.slice(0, MAX_SUSPENDED_REASON);
  const suspended = await prisma.$transaction(async (tx) => {
    const changed = await suspendIn(tx, check.work, reason, check.ownerUrn, {
      missingPrivileges: missing,
      actorUrn: check.ownerUrn,
    });
    if (!changed) return false;
    await insertAuditEvent(tx, {
      actorUrn: check.ownerUrn,
      action: check.action,
      targetUrn: check.work.urn,
      details: { missingPrivileges: missing, trigger: check.trigger ?? "schedule", via: check.via },
    });
    return true;
  });
  return { mayRun: false, missing, suspended };
}

/**
 * Marks the work suspended in the caller's transaction, with its SCHEDULE SUSPEND platform event (docs/events.md),
 * unless it already is (or, with `ownerUrn`, its owner has changed); answers whether it changed it. `event`: what the
 * event says beyond the reason (the privileges the owner lacks) and who suspended it (default the system).
 */
export async function suspendIn(
  tx: Prisma.TransactionClient,
  work: ScheduledWork,
  reason: string,
  ownerUrn?: string,
  event: { missingPrivileges?: readonly string[]; actorUrn?: string } = {},
): Promise<boolean> {
  const cut = reason.slice(0, MAX_SUSPENDED_REASON);
  const now = new Date();
  const where = { suspendedAt: null, ...(ownerUrn !== undefined && { ownerUrn }) };
  const changed =
    work.kind === "SCHEDULED_TEST"
      ? await tx.metadataTest.updateManyAndReturn({
          where: { urn: work.urn, ...where },
          data: { suspendedAt: now, suspendedReason: cut },
          select: { ownerUrn: true },
        })
      : await tx.retentionPolicy.updateManyAndReturn({
          where: { id: work.id, ...where },
          data: { suspendedAt: now, suspendedReason: cut },
          select: { ownerUrn: true },
        });
  await insertEntityChangeEvents(
    tx,
    changed.map((row) =>
      scheduleSuspendEvent({
        kind: work.kind,
        urn: work.urn,
        ownerUrn: row.ownerUrn,
        reason: cut,
        missingPrivileges: event.missingPrivileges,
        suspendedBy: event.actorUrn ?? SYSTEM_ACTOR_URN,
      }),
    ),
  );
  return changed.length > 0;
}
