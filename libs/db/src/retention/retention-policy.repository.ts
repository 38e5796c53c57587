import type { Prisma, PrismaClient, RetentionPolicy } from "../generated/prisma/client";

/**
 * The retention_policy table: the gateway's writes (in the caller's transaction, with their audit rows) and reads. A
 * run's bookkeeping (`lastTaskId`): retention-runs.ts; suspension of its owner's work: policies/scheduled-work.ts.
 */

type Db = Pick<Prisma.TransactionClient, "retentionPolicy">;

/**
 * Serializes the writes that add policies (the first statement of such a transaction): two creations racing for the
 * last place under the limit cannot both take it.
 */
export async function lockRetentionPolicyCount(tx: Pick<Prisma.TransactionClient, "$executeRaw">): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('retention_policy'))`;
}

export function countRetentionPolicies(db: Db): Promise<number> {
  return db.retentionPolicy.count();
}

export function insertRetentionPolicy(
  tx: Db,
  row: Prisma.RetentionPolicyUncheckedCreateInput,
): Promise<RetentionPolicy> {
  return tx.retentionPolicy.create({ data: row });
}

export function findRetentionPolicy(db: Db, id: string): Promise<RetentionPolicy | null> {
  return db.retentionPolicy.findUnique({ where: { id } });
}

/** The policy, its row locked for the rest of the caller's transaction; null when there is none. */
export async function lockRetentionPolicy(
  tx: Pick<Prisma.TransactionClient, "retentionPolicy" | "$queryRaw">,
  id: string,
): Promise<RetentionPolicy | null> {
  const rows = await tx.$queryRaw<
    Array<{ id: string }>
  >`SELECT id FROM retention_policy WHERE id = ${id}::uuid FOR UPDATE`;
  return rows[0] ? tx.retentionPolicy.findUnique({ where: { id } }) : null;
}

/** Throws Prisma's P2025 when there is no such row. */
export function updateRetentionPolicy(
  tx: Db,
  id: string,
  data: Prisma.RetentionPolicyUpdateInput,
): Promise<RetentionPolicy> {
  return tx.retentionPolicy.update({ where: { id }, data });
}

/** Throws Prisma's P2025 when there is no such row. */
export async function deleteRetentionPolicy(tx: Db, id: string): Promise<void> {
  await tx.retentionPolicy.delete({ where: { id } });
}

/** A page of the policies, newest first, and how many there are: both in one transaction. */
export async function retentionPolicyPage(
  prisma: PrismaClient,
  skip: number,
  take: number,
): Promise<{ total: number; rows: RetentionPolicy[] }> {
  const [total, rows] = await prisma.$transaction([
    prisma.retentionPolicy.count(),
    prisma.retentionPolicy.findMany({ orderBy: [{ createdAt: "desc" }, { id: "desc" }], skip, take }),
  ]);
  return { total, rows };
}
