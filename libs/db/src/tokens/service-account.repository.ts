import type { Prisma, PrismaClient, ServiceAccount } from "../generated/prisma/client";
import { likeLiteral } from "../like";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The service_account table (the gateway's service-account.service.ts): live accounts, and the tombstones of deleted
 * ones (deleted_at), kept so their urns never name a user again and nothing is minted for them.
 */

type Db = Pick<Prisma.TransactionClient, "serviceAccount" | "accessToken" | "$executeRaw">;

/** A live account with when any of its live tokens was last used (epoch ms; null: never, or none). */
export interface ServiceAccountRow extends ServiceAccount {
  lastUsedAt: Date | null;
}

/**
 * Serializes the writes that add accounts: the first statement of such a transaction, so that two concurrent creations
 * cannot both pass the MAX_SERVICE_ACCOUNTS count for the last place.
 */
export async function lockServiceAccountCreation(tx: Db): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('service-account:create'))`;
}

export function liveServiceAccountCount(tx: Db): Promise<number> {
  return tx.serviceAccount.count({ where: { deletedAt: null } });
}

export async function insertServiceAccount(tx: Db, row: Prisma.ServiceAccountCreateInput): Promise<ServiceAccount> {
  return tx.serviceAccount.create({ data: row });
}

/** The live account of that urn, or null (unknown or deleted). */
export async function findLiveServiceAccount(db: Db, urn: string): Promise<ServiceAccountRow | null> {
  const row = await db.serviceAccount.findFirst({ where: { urn, deletedAt: null } });
  if (!row) return null;
  return (await withLastUse(db, [row]))[0] ?? null;
}

/** Whether the urn is, or was, a service account's (a deleted account's urn is still one). */
export async function isServiceAccountUrn(db: Db, urn: string): Promise<boolean> {
  return (await db.serviceAccount.count({ where: { urn } })) > 0;
}

/**
 * Live accounts whose display name, name (urn) or description contains `query` (any case; all without one), newest
 * first, `skip` and `take` as given, and how many match in all: both in one transaction, then the last use of each
 * listed account's live tokens (one statement over the page, through access_token's partial actor index).
 */
export async function serviceAccountPage(
  prisma: PrismaClient,
  query: string | undefined,
  skip: number,
  take: number,
): Promise<{ total: number; rows: ServiceAccountRow[] }> {
  const contains = query ? { contains: likeLiteral(query), mode: "insensitive" as const } : undefined;
  const where: Prisma.ServiceAccountWhereInput = {
    deletedAt: null,
    ...(contains && { OR: [{ displayName: contains }, { urn: contains }, { description: contains }] }),
  };
  const [total, rows] = await prisma.$transaction([
    prisma.serviceAccount.count({ where }),
    prisma.serviceAccount.findMany({ where, orderBy: [{ createdAt: "desc" }, { urn: "asc" }], skip, take }),
  ]);
  return { total, rows: await withLastUse(prisma, rows) };
}

async function withLastUse(db: Db, rows: ServiceAccount[]): Promise<ServiceAccountRow[]> {
  if (rows.length === 0) return [];
  const uses = await db.accessToken.groupBy({
    by: ["actorUrn"],
    where: { actorUrn: { in: rows.map((r) => r.urn) }, revokedAt: null },
    _max: { lastUsedAt: true },
  });
  const lastUse = new Map(uses.map((u) => [u.actorUrn, u._max.lastUsedAt]));
  return rows.map((row) => ({ ...row, lastUsedAt: lastUse.get(row.urn) ?? null }));
}

/**
 * Marks the live account deleted by `by`: the first statement of the deletion's transaction, so it holds the row's lock
 * while the account's tokens are revoked (a mint waiting on `lockLiveServiceAccount` then finds it deleted). Answers
 * whether there was a live account to delete.
 */
export async function markServiceAccountDeleted(tx: Db, urn: string, by: string): Promise<boolean> {
  const now = new Date();
  const { count } = await tx.serviceAccount.updateMany({
    where: { urn, deletedAt: null },
    data: { deletedAt: now, deletedBy: by, updatedAt: now },
  });
  return count > 0;
}

/**
 * In a mint's transaction (pg client), before its token is inserted: locks the live account's row against deletion
 * until the mint commits, and answers whether it is live. A deletion that committed first is seen (the lock re-reads
 * the row), and one that comes after revokes the new token with the rest.
 */
export async function lockLiveServiceAccount(client: Queryable, urn: string): Promise<boolean> {
  const { rows } = await client.query("SELECT 1 FROM service_account WHERE urn = $1 AND deleted_at IS NULL FOR SHARE", [
    urn,
  ]);
  return rows.length > 0;
}
