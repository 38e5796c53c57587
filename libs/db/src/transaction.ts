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
 * Within `client`'s transaction, PostgreSQL cancels any statement still running `ms` from now (SQLSTATE 57014,
 * isStatementTimeout): a deadline that holds inside a statement waiting on a lock, the transaction rolling back whole.
 */
export async function setStatementTimeout(client: pg.ClientBase, ms: number): Promise<void> {
  await client.query("SELECT set_config('statement_timeout', $1, true)", [`${Math.max(1, Math.ceil(ms))}ms`]);
}

/** PostgreSQL cancelled the statement because statement_timeout passed (57014 is also an operator's cancel). */
export function isStatementTimeout(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === "57014" && typeof e.message === "string" && e.message.includes("statement timeout");
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
