import type pg from "pg";
import type { Prisma, PrismaClient } from "./generated/prisma/client";

const ignore = () => undefined;

/** Runs `fn` in one transaction on a pooled connection: COMMIT when it resolves, ROLLBACK when it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection lost while checked out emits 'error' on the client (the query in flight rejects as well); unheard,
  // that event would crash the process.
  client.on("error", ignore);
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.off("error", ignore);
    client.release(broken); // a connection that cannot even roll back is destroyed, not reused
  }
}

/**
 * Runs `fn` in one Prisma interactive transaction: the repositories' writes take its client (`tx`), so a change and
 * its audit row commit together. Prisma's own `$transaction`, named here so services open transactions without
 * reaching into the client.
 */
export function inPrismaTransaction<T>(
  prisma: Pick<PrismaClient, "$transaction">,
  fn: (tx: Prisma.TransactionClient) => Promise<T>,
): Promise<T> {
  return prisma.$transaction(fn);
}
