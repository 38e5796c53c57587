/**
 * Test databases on a real PostgreSQL server (TEST_DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/postgres;
 * the role needs CREATEDB). The migrations are applied once to a template database, and every test database is a
 * cheap `CREATE DATABASE ... TEMPLATE` copy of it.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { applyMigrations } from "./migrate/applier";
import { quoteIdent, withDatabase } from "./migrate/database";
import { defaultMigrationsDir, migrationsDigest } from "./migrate/migration-files";

export interface TestDatabase {
  url: string;
  /** Drops the database, ending any connection still open to it. */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** false: an empty database, for tests of the migrations themselves (default true: all migrations applied). */
  migrated?: boolean;
  migrationsDir?: string;
}

function serverUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
}

async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

const templates = new Map<string, Promise<string>>();

/**
 * The template database for the migrations' current contents: its name carries their digest, so an edited or added
 * migration gets a new template instead of a stale one. Parallel jest workers serialize on an advisory lock, and the
 * template is built under a temporary name and renamed when complete, so a crashed run never leaves a half-built one.
 */
function template(migrationsDir: string): Promise<string> {
  const name = `mdp_tmpl_${migrationsDigest(migrationsDir).slice(0, 16)}`;
  let pending = templates.get(name);
  if (!pending) {
    pending = withAdmin(async (admin) => {
      await admin.query("SELECT pg_advisory_lock(hashtext($1))", [name]);
      try {
        const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
        if (rowCount) return name;
        const building = `${name}_building`;
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(building)} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${quoteIdent(building)}`);
        await applyMigrations(withDatabase(serverUrl(), building), { migrationsDir });
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} RENAME TO ${quoteIdent(name)}`);
        return name;
      } finally {
        await admin.query("SELECT pg_advisory_unlock(hashtext($1))", [name]);
      }
    });
    pending.catch(() => templates.delete(name)); // let a later call retry
    templates.set(name, pending);
  }
  return pending;
}

/**
 * A new database of its own for one test (or suite): `mdp_test_<label>_<random>`, migrated unless `migrated: false`.
 * Call drop() when done (afterAll).
 */
export async function createTestDatabase(label = "test", options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const source = options.migrated === false ? null : await template(options.migrationsDir ?? defaultMigrationsDir);
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .slice(0, 30);
  const name = `mdp_test_${slug}_${randomBytes(5).toString("hex")}`;
  await withAdmin((admin) =>
    admin.query(`CREATE DATABASE ${quoteIdent(name)}${source ? ` TEMPLATE ${quoteIdent(source)}` : ""}`),
  );
  return {
    url: withDatabase(serverUrl(), name),
    drop: () => withAdmin((admin) => dropDatabase(admin, name)),
  };
}

/** How long drop() lets the database's connections close by themselves before it ends them. */
const DROP_GRACE_MS = 1_000;

/**
 * Drops a test database, letting connections that are closing close first: pool.end() resolves before its sockets
 * close, so a DROP ... WITH (FORCE) right after it ended a closing connection, which the pool reported as an 'error'
 * nobody listened to, failing whichever test was running (seen in CI). Connections still open after DROP_GRACE_MS
 * (a test that forgot one) are ended.
 */
async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  const until = Date.now() + DROP_GRACE_MS;
  while (Date.now() < until) {
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1",
      [name],
    );
    if (rows[0]!.n === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
}
