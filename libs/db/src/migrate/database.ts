import pg from "pg";

/** PostgreSQL's error codes that this package reacts to. */
const INVALID_CATALOG_NAME = "3D000"; // database does not exist
const DUPLICATE_DATABASE = "42P04";
const UNIQUE_VIOLATION = "23505"; // two CREATE DATABASE racing on pg_database's unique index

/** Double-quotes an identifier for SQL (database names cannot be bound as parameters). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function parseUrl(url: string): URL {
  const parsed = new URL(url);
  if (parsed.protocol !== "postgresql:" && parsed.protocol !== "postgres:") {
    throw new Error(`expected a postgresql:// URL, got ${parsed.protocol}//…`);
  }
  return parsed;
}

/** The database a postgresql:// URL names (its path). */
export function databaseName(url: string): string {
  const name = decodeURIComponent(parseUrl(url).pathname.replace(/^\//, ""));
  if (!name) throw new Error("the database URL names no database (its path is empty)");
  return name;
}

/**
 * The same server URL pointing at `database`. The database always goes in the path, and query parameters that could
 * name another database are dropped: combining a connection string with a separate `database` option is how a
 * "shadow" connection once ended up on the main database (pg lets the string win).
 */
export function withDatabase(url: string, database: string): string {
  const parsed = parseUrl(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  for (const key of ["database", "dbname", "db"]) parsed.searchParams.delete(key);
  return parsed.toString();
}

function pgCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Creates the database `url` names when it does not exist, connecting to the `postgres` database of the same server to
 * do so. Returns whether it created it. Safe when several processes race to create the same database.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    return false;
  } catch (error) {
    if (pgCode(error) !== INVALID_CATALOG_NAME) throw error;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const admin = new pg.Client({ connectionString: withDatabase(url, "postgres") });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${quoteIdent(databaseName(url))}`);
    return true;
  } catch (error) {
    const code = pgCode(error);
    if (code === DUPLICATE_DATABASE || code === UNIQUE_VIOLATION) return false;
    throw error;
  } finally {
    await admin.end();
  }
}
