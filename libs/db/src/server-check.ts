import pg from "pg";

/**
 * Whether a PostgreSQL server accepts this URL's connection (no password prompt: the machine's trust-auth default)
 * and answers a trivial statement within `timeoutMs`. Its own entry (`@mdp/db/server-check`), without the Prisma
 * client, so the test and start scripts probe a server before anything else loads.
 */
export async function canConnect(databaseUrl: string, timeoutMs = 2000): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
