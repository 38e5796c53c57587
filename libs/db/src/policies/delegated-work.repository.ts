import { Prisma, type MetadataTest, type PrismaClient, type RetentionPolicy } from "../generated/prisma/client";
import { insertEntityChangeEvents, scheduleSuspendEvent } from "../events/entity-change-events";

/**
 * What a user, or one of its tokens, set in motion (the gateway's delegatedWork and revokeActorAccess): its scheduled
 * tests and retention policies, the tasks it created. One aggregate read across metadata_test, retention_policy and
 * task (tokens minted with a token: access-token.repository.ts), and the suspension of that work on revocation.
 */

/** Whose work: an owner, work set through a token, or both. */
export interface WorkOwnerFilter {
  ownerUrn?: string;
  tokenId?: string;
}

const owned = (by: WorkOwnerFilter) => ({
  ...(by.ownerUrn !== undefined && { ownerUrn: by.ownerUrn }),
  ...(by.tokenId !== undefined && { ownerTokenId: by.tokenId }),
});

/** Scheduled tests owned (or last set through the token), newest first, at most `limit`. */
export function scheduledTestsOwnedBy(
  prisma: PrismaClient,
  by: WorkOwnerFilter,
  limit: number,
): Promise<MetadataTest[]> {
  return prisma.metadataTest.findMany({
    where: { ...owned(by), scheduleCron: { not: null } },
    orderBy: [{ createdAt: "desc" }, { urn: "asc" }],
    take: limit,
  });
}

/** Retention policies owned (or last set through the token), newest first, at most `limit`. */
export function retentionPoliciesOwnedBy(
  prisma: PrismaClient,
  by: WorkOwnerFilter,
  limit: number,
): Promise<RetentionPolicy[]> {
  return prisma.retentionPolicy.findMany({
    where: owned(by),
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: limit,
  });
}

/**
 * The ids of the tasks created by the owner (or through the token), newest first, at most `limit`: read only (the
 * task rows are @mdp/tasks', which reads them whole).
 */
export async function taskIdsCreatedBy(prisma: PrismaClient, by: WorkOwnerFilter, limit: number): Promise<string[]> {
  const rows = await prisma.task.findMany({
    where: {
      ...(by.ownerUrn !== undefined && { createdBy: by.ownerUrn }),
      ...(by.tokenId !== undefined && { createdVia: by.tokenId }),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit,
    select: { id: true },
  });
  return rows.map((t) => t.id);
}

/**
 * Suspends, in the caller's transaction, deferred work not suspended yet: its tests that have a schedule, actions
 * (which run for their owner at every push) or evaluate on change (for their owner at every change), and its retention
 * policies, each with its SCHEDULE SUSPEND platform event. Whose: `{ownerUrn}`, a user's own; `{mintedBy}`, another
 * user's (a service account's) set through a token this user minted — revokeActorAccess of a minter no longer trusts
 * what it handed out, and whoever held the token chose what that work does. Answers the rows it suspended.
 */
export async function suspendDeferredWorkOf(
  tx: Prisma.TransactionClient,
  whose: { ownerUrn: string } | { mintedBy: string },
  reason: string,
  now: Date,
  events: { suspendedBy: string; policyUrnOf: (id: string) => string },
): Promise<{ tests: MetadataTest[]; policies: RetentionPolicy[] }> {
  const owned =
    "ownerUrn" in whose
      ? Prisma.sql`owner_urn = ${whose.ownerUrn}`
      : Prisma.sql`owner_urn <> ${whose.mintedBy}
          AND owner_token_id IN (SELECT id::text FROM access_token WHERE owner_urn = ${whose.mintedBy})`;
  const acting = await tx.$queryRaw<Array<{ urn: string }>>`
      SELECT urn FROM metadata_test
       WHERE ${owned} AND suspended_at IS NULL
         AND (schedule_cron IS NOT NULL OR definition ? 'actions' OR (evaluate_on_change AND state = 'ACTIVE'))`;
  const policyIds = await tx.$queryRaw<Array<{ id: string }>>`
      SELECT id::text AS id FROM retention_policy WHERE ${owned} AND suspended_at IS NULL`;
  const tests = await tx.metadataTest.updateManyAndReturn({
    where: { urn: { in: acting.map((t) => t.urn) }, suspendedAt: null },
    data: { suspendedAt: now, suspendedReason: reason },
  });
  const policies = await tx.retentionPolicy.updateManyAndReturn({
    where: { id: { in: policyIds.map((p) => p.id) }, suspendedAt: null },
    data: { suspendedAt: now, suspendedReason: reason },
  });
  await insertEntityChangeEvents(tx, [
    ...tests.map((t) =>
      scheduleSuspendEvent({
        kind: "SCHEDULED_TEST",
        urn: t.urn,
        ownerUrn: t.ownerUrn,
        reason,
        suspendedBy: events.suspendedBy,
      }),
    ),
    ...policies.map((p) =>
      scheduleSuspendEvent({
        kind: "RETENTION_POLICY",
        urn: events.policyUrnOf(p.id),
        ownerUrn: p.ownerUrn,
        reason,
        suspendedBy: events.suspendedBy,
      }),
    ),
  ]);
  return { tests, policies };
}
