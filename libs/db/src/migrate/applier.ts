import { randomUUID } from "node:crypto";
import pg from "pg";
import {
  checksumMatches,
  checksumOf,
  defaultMigrationsDir,
  type MigrationFile,
  readMigrations,
} from "./migration-files";

/** The key Prisma's schema engine locks on, so this applier and `prisma migrate deploy` also exclude each other. */
export const PRISMA_ADVISORY_LOCK_KEY = 72707369;

/** The table exactly as Prisma's schema engine creates it on PostgreSQL. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrateOptions {
  /** Prisma-format migrations folder; the repository's prisma/migrations by default. */
  migrationsDir?: string;
  log?: (message: string) => void;
  /** How long to wait for another process that is applying migrations (default 120 s). */
  lockTimeoutMs?: number;
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
  /** Drift that blocks applying: failed, edited or missing migrations. Empty when healthy. */
  problems: string[];
}

/** Thrown when the history is not in a state migrations can be applied to; `problems` says why. */
export class MigrationError extends Error {
  constructor(readonly problems: string[]) {
    super(`migrations cannot be applied:\n  - ${problems.join("\n  - ")}`);
    this.name = "MigrationError";
  }
}

interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  started_at: Date;
  logs: string | null;
}

async function readHistory(client: pg.Client): Promise<MigrationRow[]> {
  const { rows: exists } = await client.query<{ table: string | null }>(
    `SELECT to_regclass('"_prisma_migrations"')::text AS "table"`,
  );
  if (!exists[0]?.table) return [];
  const { rows } = await client.query<MigrationRow>(
    `SELECT id, checksum, migration_name, finished_at, rolled_back_at, started_at, logs
       FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
  );
  return rows;
}

/** Compares the folder with the table the way Prisma's status does, but treats every kind of drift as a problem. */
function diagnose(files: MigrationFile[], history: MigrationRow[], dir: string): MigrationStatus {
  const problems: string[] = [];
  const byName = new Map(files.map((file) => [file.name, file]));
  // Rows marked rolled back are kept only as an audit trail, as in Prisma.
  const live = history.filter((row) => row.rolled_back_at === null);
  for (const row of live) {
    const file = byName.get(row.migration_name);
    if (row.finished_at === null) {
      const reason = row.logs ? `: ${row.logs.split("\n")[0]}` : "";
      problems.push(
        `migration ${row.migration_name} failed (started ${row.started_at.toISOString()})${reason}. ` +
          `Its changes were rolled back; fix it, then mark it rolled back (cli.ts resolve --rolled-back ${row.migration_name}) and deploy again`,
      );
    } else if (!file) {
      problems.push(`migration ${row.migration_name} is applied to the database but missing from ${dir}`);
    } else if (file.script && !checksumMatches(file.script, row.checksum)) {
      problems.push(
        `migration ${row.migration_name} was modified after it was applied ` +
          `(checksum in database ${row.checksum}, on disk ${checksumOf(file.script)}); restore it and put the change in a new migration`,
      );
    }
  }
  const recorded = new Set(live.map((row) => row.migration_name));
  const pending = files.filter((file) => !recorded.has(file.name));
  for (const file of pending) {
    if (!file.script) problems.push(`migration folder ${file.name} in ${dir} has no migration.sql`);
  }
  const applied = live.filter((row) => row.finished_at !== null).map((row) => row.migration_name);
  return { applied, pending: pending.map((file) => file.name), problems };
}

async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // Migrations go where Prisma would put them; a ?schema= parameter would make the two tools disagree.
  const schema = new URL(databaseUrl).searchParams.get("schema");
  if (schema && schema !== "public") {
    await client.end();
    throw new Error(`?schema=${schema} is not supported: migrations are applied to the public schema`);
  }
  return client;
}

/** Applied, pending and problem migrations of a database. Read-only; takes no lock. Throws if it cannot connect. */
export async function migrationStatus(
  databaseUrl: string,
  options: Pick<MigrateOptions, "migrationsDir"> = {},
): Promise<MigrationStatus> {
  const dir = options.migrationsDir ?? defaultMigrationsDir;
  const client = await connect(databaseUrl);
  try {
    return diagnose(readMigrations(dir), await readHistory(client), dir);
  } finally {
    await client.end();
  }
}

/** Runs `fn` holding Prisma's migration lock on this connection. */
async function withMigrationLock<T>(client: pg.Client, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  await client.query(`SELECT set_config('lock_timeout', $1, false)`, [`${timeoutMs}ms`]);
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
  } catch (error) {
    throw new Error(
      `another process held the migration lock (pg_advisory_lock(${PRISMA_ADVISORY_LOCK_KEY})) for over ${timeoutMs} ms`,
      { cause: error },
    );
  }
  // The timeout was for the lock; a migration's own statements may wait as long as they need.
  await client.query("RESET lock_timeout");
  try {
    return await fn();
  } finally {
    // Closing the session releases the lock too, so a broken connection must not mask the original error here.
    await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]).catch(() => undefined);
  }
}

async function applyOne(client: pg.Client, migration: MigrationFile & { script: Buffer }): Promise<void> {
  const id = randomUUID();
  // Recorded before it runs, in its own statement, as Prisma does: if the script fails the row stays behind as a
  // failed migration (finished_at and rolled_back_at null) that blocks later deploys until someone resolves it.
  await client.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
     VALUES ($1, $2, $3, now(), 0)`,
    [id, checksumOf(migration.script), migration.name],
  );
  try {
    // Script and bookkeeping commit together: a migration is either fully applied and recorded, or not at all.
    await client.query("BEGIN");
    await client.query(migration.script.toString("utf8")); // simple query protocol: runs every statement
    await client.query(
      `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = applied_steps_count + 1 WHERE id = $1`,
      [id],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown }).code;
    await client.query(`UPDATE "_prisma_migrations" SET logs = $1 WHERE id = $2`, [
      `Database error${typeof code === "string" ? ` code ${code}` : ""}: ${message}`,
      id,
    ]);
    throw new MigrationError([`migration ${migration.name} failed and was rolled back: ${message}`]);
  }
}

/**
 * Applies the pending migrations of `migrationsDir` in name order, each in its own transaction, recording them in
 * `_prisma_migrations` exactly as Prisma does. Holds Prisma's advisory lock, so concurrent callers (or a concurrent
 * `prisma migrate deploy`) apply each migration once. Refuses with a MigrationError when the history has drifted.
 */
export async function applyMigrations(
  databaseUrl: string,
  options: MigrateOptions = {},
): Promise<{ applied: string[] }> {
  const dir = options.migrationsDir ?? defaultMigrationsDir;
  const log = options.log ?? (() => undefined);
  const client = await connect(databaseUrl);
  try {
    return await withMigrationLock(client, options.lockTimeoutMs ?? 120_000, async () => {
      await client.query(CREATE_MIGRATIONS_TABLE);
      const files = readMigrations(dir);
      const status = diagnose(files, await readHistory(client), dir);
      if (status.problems.length > 0) throw new MigrationError(status.problems);
      const applied: string[] = [];
      for (const name of status.pending) {
        const file = files.find((candidate) => candidate.name === name);
        if (!file?.script) throw new Error(`unreachable: ${name} has no script`); // diagnose reported it already
        log(`applying ${name}`);
        await applyOne(client, { ...file, script: file.script });
        applied.push(name);
      }
      return { applied };
    });
  } finally {
    await client.end();
  }
}

/**
 * Marks a failed migration as rolled back (what `prisma migrate resolve --rolled-back` does), so the next deploy
 * retries it. Failed migrations here are always fully rolled back, so this only clears the record.
 */
export async function markRolledBack(databaseUrl: string, migrationName: string): Promise<void> {
  const client = await connect(databaseUrl);
  try {
    await withMigrationLock(client, 120_000, async () => {
      const { rowCount } = await client.query(
        `UPDATE "_prisma_migrations" SET rolled_back_at = now()
          WHERE migration_name = $1 AND finished_at IS NULL AND rolled_back_at IS NULL`,
        [migrationName],
      );
      if (!rowCount) throw new Error(`migration ${migrationName} is not in a failed state`);
    });
  } finally {
    await client.end();
  }
}
