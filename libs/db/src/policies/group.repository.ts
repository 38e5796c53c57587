import type { Group, Prisma, PrismaClient } from "../generated/prisma/client";
import { likeLiteral } from "../like";

/**
 * The corp_group and group_member tables (a group and its members are one aggregate): writes in the caller's
 * transaction (with their audit rows), and the listing. Which groups a user is in, for its grants: grants.ts.
 */

type Db = Pick<Prisma.TransactionClient, "group" | "groupMember">;

/** Throws Prisma's P2002 when the urn is taken (isUniqueViolation). */
export async function insertGroup(tx: Db, row: { urn: string; name: string; description: string | null }) {
  await tx.group.create({ data: row });
}

export async function groupExists(db: Db, urn: string): Promise<boolean> {
  return (await db.group.findUnique({ where: { urn }, select: { urn: true } })) !== null;
}

/** Adds the users to the group; those already in it are left as they are. */
export async function addGroupMembers(tx: Db, groupUrn: string, userUrns: readonly string[]): Promise<void> {
  await tx.groupMember.createMany({ data: userUrns.map((userUrn) => ({ groupUrn, userUrn })), skipDuplicates: true });
}

export async function removeGroupMembers(tx: Db, groupUrn: string, userUrns: readonly string[]): Promise<void> {
  await tx.groupMember.deleteMany({ where: { groupUrn, userUrn: { in: [...userUrns] } } });
}

/**
 * Groups whose name contains `query` (any case; all without one), by name, each with its members' urns in order,
 * and how many match in all: both in one transaction.
 */
export async function groupPage(
  prisma: PrismaClient,
  query: string | undefined,
  skip: number,
  take: number,
): Promise<{ total: number; rows: Array<Group & { members: string[] }> }> {
  const where: Prisma.GroupWhereInput = query ? { name: { contains: likeLiteral(query), mode: "insensitive" } } : {};
  const [total, rows] = await prisma.$transaction([
    prisma.group.count({ where }),
    prisma.group.findMany({
      where,
      orderBy: [{ name: "asc" }, { urn: "asc" }],
      skip,
      take,
      include: { members: { select: { userUrn: true }, orderBy: { userUrn: "asc" } } },
    }),
  ]);
  return { total, rows: rows.map((g) => ({ ...g, members: g.members.map((m) => m.userUrn) })) };
}

/**
 * The groups `userUrn` is a member of, by name, at most `take` after `skip`, each with how many members it has, and
 * how many there are in all (the web app's "groups of the signed-in user", DataHub's IsMemberOfGroup relationships).
 */
export async function groupsOfUser(
  prisma: PrismaClient,
  userUrn: string,
  skip: number,
  take: number,
): Promise<{ total: number; rows: Array<Group & { memberCount: number }> }> {
  const where: Prisma.GroupWhereInput = { members: { some: { userUrn } } };
  const [total, rows] = await prisma.$transaction([
    prisma.group.count({ where }),
    prisma.group.findMany({
      where,
      orderBy: [{ name: "asc" }, { urn: "asc" }],
      skip,
      take,
      include: { _count: { select: { members: true } } },
    }),
  ]);
  return { total, rows: rows.map(({ _count, ...g }) => ({ ...g, memberCount: _count.members })) };
}

/** The urns of a group's members, in order. */
export async function getGroupMembers(db: Db, groupUrn: string): Promise<string[]> {
  const rows = await db.groupMember.findMany({
    where: { groupUrn },
    select: { userUrn: true },
    orderBy: { userUrn: "asc" },
  });
  return rows.map((m) => m.userUrn);
}
