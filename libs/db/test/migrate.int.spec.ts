/** The plain-pg migration applier against a real PostgreSQL; each test gets an empty database of its own. */
import pg from "pg";
import { applyMigrations, markRolledBack, MigrationError, migrationStatus } from "../src/migrate/applier";
import { defaultMigrationsDir, readMigrations } from "../src/migrate/migration-files";
import { createTestDatabase, type TestDatabase } from "../src/testing";
import { copyMigrations, removeDir, writeMigration } from "./support/migrations-dir";
import { prismaEngine } from "./support/prisma-engine";

const serverUrl = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const repoMigrations = readMigrations(defaultMigrationsDir).map((m) => m.name);

async function query<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function tableExists(url: string, table: string): Promise<boolean> {
  const rows = await query<{ t: string | null }>(url, "SELECT to_regclass($1)::text AS t", [`"${table}"`]);
  return rows[0]?.t != null;
}

async function rejection(promise: Promise<unknown>): Promise<MigrationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof MigrationError)) throw new Error(`expected a MigrationError, got ${String(error)}`);
  return error;
}

describe("applyMigrations", () => {
  let db: TestDatabase;
  const dirs: string[] = [];
  beforeEach(async () => {
    db = await createTestDatabase("migrate", { migrated: false });
  });
  afterEach(async () => {
    await db.drop();
    dirs.splice(0).forEach(removeDir);
  });
  function scratchDir(): string {
    const dir = copyMigrations();
    dirs.push(dir);
    return dir;
  }

  it("applies every migration to a fresh database, and a second run is a no-op", async () => {
    expect(repoMigrations.length).toBeGreaterThan(0);
    const logged: string[] = [];
    await expect(applyMigrations(db.url, { log: (line) => logged.push(line) })).resolves.toEqual({
      applied: repoMigrations,
    });
    expect(logged).toEqual(repoMigrations.map((name) => `applying ${name}`));
    await expect(applyMigrations(db.url)).resolves.toEqual({ applied: [] });
    await expect(migrationStatus(db.url)).resolves.toEqual({ applied: repoMigrations, pending: [], problems: [] });
    const rows = await query<{ migration_name: string; applied_steps_count: number; checksum: string }>(
      db.url,
      `SELECT migration_name, applied_steps_count, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL`,
    );
    expect(rows.map((row) => row.migration_name)).toEqual(repoMigrations);
    for (const row of rows)
      expect(row).toMatchObject({ applied_steps_count: 1, checksum: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it("reports pending migrations before they are applied", async () => {
    await expect(migrationStatus(db.url)).resolves.toEqual({ applied: [], pending: repoMigrations, problems: [] });
  });

  it("applies each migration exactly once when two processes apply to one fresh database at once", async () => {
    const dir = scratchDir();
    // Slow migrations widen the window in which the two would collide without the advisory lock.
    writeMigration(dir, "29990101000001_slow_one", `SELECT pg_sleep(0.3);\nCREATE TABLE "slow_one" ("id" INTEGER);\n`);
    writeMigration(dir, "29990101000002_slow_two", `SELECT pg_sleep(0.3);\nCREATE TABLE "slow_two" ("id" INTEGER);\n`);
    const all = readMigrations(dir).map((m) => m.name);
    const [first, second] = await Promise.all([
      applyMigrations(db.url, { migrationsDir: dir }),
      applyMigrations(db.url, { migrationsDir: dir }),
    ]);
    expect([...first!.applied, ...second!.applied].sort()).toEqual([...all].sort());
    const rows = await query<{ migration_name: string; n: number }>(
      db.url,
      `SELECT migration_name, count(*)::int AS n FROM "_prisma_migrations" GROUP BY migration_name ORDER BY migration_name`,
    );
    expect(rows).toEqual(all.map((name) => ({ migration_name: name, n: 1 })));
  });

  it("reports a migration edited after it was applied, in deploy and status, as Prisma's engine does", async () => {
    const dir = scratchDir();
    await applyMigrations(db.url, { migrationsDir: dir });
    const edited = repoMigrations[0]!;
    writeMigration(dir, edited, "-- edited\nSELECT 1;\n");
    const error = await rejection(applyMigrations(db.url, { migrationsDir: dir }));
    expect(error.problems).toEqual([expect.stringContaining(`migration ${edited} was modified after it was applied`)]);
    const status = await migrationStatus(db.url, { migrationsDir: dir });
    expect(status.problems).toEqual(error.problems);
    const prisma = await prismaEngine({ op: "diagnose", serverUrl, databaseUrl: db.url, migrationsDir: dir });
    expect(prisma.editedMigrationNames).toEqual([edited]);
  });

  it("reports a migration recorded in the database but missing on disk", async () => {
    const dir = scratchDir();
    writeMigration(dir, "29990101000000_only_elsewhere", `CREATE TABLE "elsewhere" ("id" INTEGER);\n`);
    await applyMigrations(db.url, { migrationsDir: dir });
    const error = await rejection(applyMigrations(db.url)); // the repository's folder lacks it
    expect(error.problems).toEqual([
      expect.stringContaining("migration 29990101000000_only_elsewhere is applied to the database but missing from"),
    ]);
    expect((await migrationStatus(db.url)).problems).toEqual(error.problems);
  });

  it("rolls a failing migration back completely, records it as failed and refuses to continue until resolved", async () => {
    const dir = scratchDir();
    const broken = "29990101000000_broken";
    writeMigration(
      dir,
      broken,
      `CREATE TABLE "half_done" ("id" INTEGER);\nINSERT INTO "half_done" VALUES (1);\nINSERT INTO "no_such_table" VALUES (1);\n`,
    );
    writeMigration(dir, "29990101000001_after", `CREATE TABLE "after_broken" ("id" INTEGER);\n`);

    const error = await rejection(applyMigrations(db.url, { migrationsDir: dir }));
    expect(error.problems).toEqual([
      expect.stringMatching(/^migration 29990101000000_broken failed and was rolled back: .*no_such_table/),
    ]);
    expect(await tableExists(db.url, "half_done")).toBe(false); // no partial changes
    expect(await tableExists(db.url, "after_broken")).toBe(false); // nothing after it either
    const status = await migrationStatus(db.url, { migrationsDir: dir });
    expect(status.applied).toEqual(repoMigrations); // the good ones before it stay applied
    expect(status.pending).toEqual(["29990101000001_after"]);
    expect(status.problems).toEqual([expect.stringContaining(`migration ${broken} failed`)]);
    // Recorded the way Prisma records a failure, so `prisma migrate status` sees the same thing.
    const prisma = await prismaEngine({ op: "diagnose", serverUrl, databaseUrl: db.url, migrationsDir: dir });
    expect(prisma.failedMigrationNames).toEqual([broken]);
    await expect(rejection(applyMigrations(db.url, { migrationsDir: dir }))).resolves.toMatchObject({
      problems: [expect.stringContaining(`migration ${broken} failed`)],
    });

    // The way out: fix the script, mark the failure rolled back, deploy again.
    writeMigration(dir, broken, `CREATE TABLE "half_done" ("id" INTEGER);\n`);
    await markRolledBack(db.url, broken);
    await expect(applyMigrations(db.url, { migrationsDir: dir })).resolves.toEqual({
      applied: [broken, "29990101000001_after"],
    });
    await expect(migrationStatus(db.url, { migrationsDir: dir })).resolves.toMatchObject({ pending: [], problems: [] });
  });

  it("reports a migration folder without migration.sql", async () => {
    const dir = scratchDir();
    writeMigration(dir, "29990101000000_empty_folder", "");
    removeDir(`${dir}/29990101000000_empty_folder/migration.sql`);
    const error = await rejection(applyMigrations(db.url, { migrationsDir: dir }));
    expect(error.problems).toEqual([expect.stringContaining("29990101000000_empty_folder")]);
  });
});
