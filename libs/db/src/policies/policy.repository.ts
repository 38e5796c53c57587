import type { Policy, Prisma, PrismaClient } from "../generated/prisma/client";
import { likeLiteral } from "../like";

/**
 * The policy table's rows as stored (the built-in root policy is not one: grants.ts). What a user is granted is read
 * by grants.ts; this is the policies' own management: writes in the caller's transaction (with their audit rows),
 * and the reads of policy management.
 */

type Db = Pick<Prisma.TransactionClient, "policy">;

export async function insertPolicy(tx: Db, row: Prisma.PolicyCreateInput): Promise<void> {
  await tx.policy.create({ data: row });
}

export function findPolicy(db: Db, urn: string): Promise<Policy | null> {
  return db.policy.findUnique({ where: { urn } });
}

/** Throws Prisma's P2025 when there is no such row (notFoundWhenMissing turns it into a 404). */
export async function updatePolicy(tx: Db, urn: string, data: Prisma.PolicyUpdateInput): Promise<void> {
  await tx.policy.update({ where: { urn }, data });
}

/** Throws Prisma's P2025 when there is no such row. */
export async function deletePolicy(tx: Db, urn: string): Promise<void> {
  await tx.policy.delete({ where: { urn } });
}

/**
 * Stored policies whose name contains `query` (any case; all without one), oldest first, `skip` and `take` as given,
 * and how many match in all: both in one transaction.
 */
export async function policyPage(
  prisma: PrismaClient,
  query: string | undefined,
  skip: number,
  take: number,
): Promise<{ total: number; rows: Policy[] }> {
  const where: Prisma.PolicyWhereInput = query ? { name: { contains: likeLiteral(query), mode: "insensitive" } } : {};
  const [total, rows] = await prisma.$transaction([
    prisma.policy.count({ where }),
    prisma.policy.findMany({ where, orderBy: [{ createdAt: "asc" }, { urn: "asc" }], skip, take }),
  ]);
  return { total, rows };
}
