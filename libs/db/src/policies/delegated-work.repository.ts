import { Prisma, type MetadataTest, type PrismaClient, type RetentionPolicy } from "../generated/prisma/client";
import { insertEntityChangeEvents, scheduleSuspendEvent } from "../events/entity-change-events";
import { MAX_SUSPENDED_REASON } from "./scheduled-work";

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
 * Whose deferred work a suspension reaches: `{ownerUrn}`, a user's own; `{mintedBy}`, another user's (a service
 * account's) set through a SERVICE_ACCOUNT token this user minted — revokeActorAccess of a minter no longer trusts the
 * secrets it was handed, and whoever held such a token chose what that work does (a PERSONAL token it minted for
 * someone acts for that someone, bounded by the minter at every use: its work is left alone); `{setThrough}`, work last
 * set through one of these tokens by whom each acts for (the tokens a revocation stops: tokensStoppedWith).
 */
export type DeferredWorkOf =
  { ownerUrn: string } | { mintedBy: string } | { setThrough: ReadonlyArray<{ tokenId: string; ownerUrn: string }> };

/**
 * Suspends, in the caller's transaction, deferred work not suspended yet: its tests that have a schedule, actions
 * (which run for their owner at every push) or evaluate on change (for their owner at every change), and its retention
 * policies, each with its SCHEDULE SUSPEND platform event. `reason`: one for all, or each piece's from the token it
 * was set through. Answers the rows it suspended.
 */
export async function suspendDeferredWorkOf(
  tx: Prisma.TransactionClient,
  whose: DeferredWorkOf,
  reason: string | ((work: { ownerTokenId: string | null }) => string),
  now: Date,
  events: { suspendedBy: string; policyUrnOf: (id: string) => string },
): Promise<{ tests: MetadataTest[]; policies: RetentionPolicy[] }> {
  if ("setThrough" in whose && whose.setThrough.length === 0) return { tests: [], policies: [] };
  const owned =
    "ownerUrn" in whose
      ? Prisma.sql`owner_urn = ${whose.ownerUrn}`
      : "mintedBy" in whose
        ? Prisma.sql`owner_urn <> ${whose.mintedBy}
          AND owner_token_id IN (SELECT id::text FROM access_token
                                  WHERE owner_urn = ${whose.mintedBy} AND type = 'SERVICE_ACCOUNT')`
        : // The token's own user only: work whose owner has changed since is another's choice, not the token's.
          Prisma.sql`(owner_token_id, owner_urn) IN (
            SELECT * FROM unnest(${whose.setThrough.map((t) => t.tokenId)}::text[],
                                 ${whose.setThrough.map((t) => t.ownerUrn)}::text[]))`;
  const acting = await tx.$queryRaw<Array<{ key: string; ownerTokenId: string | null }>>`
      SELECT urn AS key, owner_token_id AS "ownerTokenId" FROM metadata_test
       WHERE ${owned} AND suspended_at IS NULL
         AND (schedule_cron IS NOT NULL OR definition ? 'actions' OR (evaluate_on_change AND state = 'ACTIVE'))`;
  const policyIds = await tx.$queryRaw<Array<{ key: string; ownerTokenId: string | null }>>`
      SELECT id::text AS key, owner_token_id AS "ownerTokenId" FROM retention_policy
       WHERE ${owned} AND suspended_at IS NULL`;
  const tests: MetadataTest[] = [];
  const policies: RetentionPolicy[] = [];
  // One update per distinct reason (one, unless each names the token its work was set through).
  for (const [why, urns] of byReason(acting, reason)) {
    tests.push(
      ...(await tx.metadataTest.updateManyAndReturn({
        where: { urn: { in: urns }, suspendedAt: null },
        data: { suspendedAt: now, suspendedReason: why },
      })),
    );
  }
  for (const [why, ids] of byReason(policyIds, reason)) {
    policies.push(
      ...(await tx.retentionPolicy.updateManyAndReturn({
        where: { id: { in: ids }, suspendedAt: null },
        data: { suspendedAt: now, suspendedReason: why },
      })),
    );
  }
  await insertEntityChangeEvents(tx, [
    ...tests.map((t) =>
      scheduleSuspendEvent({
        kind: "SCHEDULED_TEST",
        urn: t.urn,
        ownerUrn: t.ownerUrn,
        reason: t.suspendedReason ?? "",
        suspendedBy: events.suspendedBy,
      }),
    ),
    ...policies.map((p) =>
      scheduleSuspendEvent({
        kind: "RETENTION_POLICY",
        urn: events.policyUrnOf(p.id),
        ownerUrn: p.ownerUrn,
        reason: p.suspendedReason ?? "",
        suspendedBy: events.suspendedBy,
      }),
    ),
  ]);
  return { tests, policies };
}

/** The keys of `rows` grouped by the reason each is suspended with (cut to the column's size). */
function byReason(
  rows: ReadonlyArray<{ key: string; ownerTokenId: string | null }>,
  reason: string | ((work: { ownerTokenId: string | null }) => string),
): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const row of rows) {
    const why = (typeof reason === "string" ? reason : reason(row)).slice(0, MAX_SUSPENDED_REASON);
    groups.set(why, [...(groups.get(why) ?? []), row.key]);
  }
  return groups;
}
