import type { PrismaClient } from "../generated/prisma/client";

/**
 * The rows that are the source of truth of schedules (docs/scheduled-tests.md): a scheduled test's `metadata_test`
 * row and a retention policy's `retention_policy` row (read by
 * `findRetentionPolicy`, retention-policy.repository.ts). What a firing reads of one, and what the sync of the job
 * schedulers reads of all.
 */

/** A scheduled test as its firing reads it: who it acts for, whether it may run, and what its actions write. */
export interface ScheduledTestRow {
  urn: string;
  state: "ACTIVE" | "INACTIVE";
  scheduleCron: string | null;
  ownerUrn: string;
  ownerTokenId: string | null;
  suspendedAt: Date | null;
  definition: unknown;
}

export async function findScheduledTest(prisma: PrismaClient, urn: string): Promise<ScheduledTestRow | null> {
  return prisma.metadataTest.findUnique({
    where: { urn },
    select: {
      urn: true,
      state: true,
      scheduleCron: true,
      ownerUrn: true,
      ownerTokenId: true,
      suspendedAt: true,
      definition: true,
    },
  });
}

/** Every test that has a schedule: its urn and cron. */
export async function listTestSchedules(prisma: PrismaClient): Promise<Array<{ urn: string; cron: string }>> {
  const rows = await prisma.metadataTest.findMany({
    where: { scheduleCron: { not: null } },
    select: { urn: true, scheduleCron: true },
  });
  return rows.map((r) => ({ urn: r.urn, cron: r.scheduleCron as string }));
}

/** Every retention policy (each has a schedule): its id and cron. */
export async function listRetentionSchedules(prisma: PrismaClient): Promise<Array<{ id: string; cron: string }>> {
  return prisma.retentionPolicy.findMany({ select: { id: true, cron: true } });
}
