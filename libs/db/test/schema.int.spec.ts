/**
 * The migrations build exactly the database schema.prisma describes, and this applier and Prisma's own engine
 * (the Wasm build of `prisma migrate`, run in a child process) agree on each other's bookkeeping.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { applyMigrations, migrationStatus } from "../src/migrate/applier";
import { defaultMigrationsDir, readMigrations } from "../src/migrate/migration-files";
import { defaultSchemaPath } from "../src/migrate/schema-engine";
import { createTestDatabase, type TestDatabase } from "../src/testing";
import { prismaEngine } from "./support/prisma-engine";

const serverUrl = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const repoMigrations = readMigrations(defaultMigrationsDir).map((m) => m.name);

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * What the migrations create on purpose that schema.prisma cannot describe: a sequence of its own (the platform-event
 * outbox's commit-order positions, libs/db/src/events/platform-event.repository.ts).
 */
const BEYOND_SCHEMA_PRISMA = ["platform_event_position"];

/** The catalog facts a schema consists of, in a comparable form; `except` leaves out bookkeeping tables. */
function catalog(url: string, except: string[] = []): Promise<Record<string, unknown[]>> {
  const queries: Record<string, string> = {
    tables: `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
    columns: `SELECT table_name, column_name, ordinal_position, data_type, udt_name, character_maximum_length,
                     datetime_precision, is_nullable, column_default
                FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 3`,
    indexes: `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2`,
    constraints: `SELECT conrelid::regclass::text AS table_name, conname, contype::text, pg_get_constraintdef(oid) AS def
                    FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
    enums: `SELECT t.typname, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
              FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid
             WHERE t.typnamespace = 'public'::regnamespace GROUP BY 1 ORDER BY 1`,
    sequences: `SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY 1`,
  };
  return withClient(url, async (client) => {
    const facts: Record<string, unknown[]> = {};
    for (const [kind, sql] of Object.entries(queries)) {
      const rows = (await client.query<Record<string, unknown>>(sql)).rows;
      facts[kind] = rows.filter(
        (row) => !except.some((table) => Object.values(row).some((v) => typeof v === "string" && v.includes(table))),
      );
    }
    return facts;
  });
}

describe("the migrations", () => {
  const dbs: TestDatabase[] = [];
  async function freshDatabase(label: string, migrated = false): Promise<TestDatabase> {
    const db = await createTestDatabase(label, { migrated });
    dbs.push(db);
    return db;
  }
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.drop();
  });

  it("contain everything schema.prisma describes (migrate diff --from-migrations --to-schema is empty)", async () => {
    await expect(prismaEngine({ op: "diff", serverUrl, from: "migrations", to: "schema" })).resolves.toBe("");
  });

  it("would be reported as incomplete if schema.prisma changed (the check above is not vacuous)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "mdp-schema-"));
    try {
      const schemaPath = path.join(dir, "schema.prisma");
      const schema = readFileSync(defaultSchemaPath, "utf8");
      writeFileSync(schemaPath, schema.replace(/^model Task \{$/m, "model Task {\n  priority Int @default(0)"));
      const script = await prismaEngine({
        op: "diff",
        serverUrl,
        schemaPath,
        migrationsDir: defaultMigrationsDir,
        from: "migrations",
        to: "schema",
      });
      expect(script).toContain(`ALTER TABLE "task" ADD COLUMN     "priority" INTEGER NOT NULL DEFAULT 0;`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("build a database Prisma's engine finds identical to schema.prisma", async () => {
    const db = await freshDatabase("schema_diff");
    await applyMigrations(db.url);
    await expect(
      prismaEngine({ op: "diff", serverUrl, databaseUrl: db.url, from: "database", to: "schema" }),
    ).resolves.toBe("");
  });

  it("build the same catalog as the engine's from-empty SQL for schema.prisma", async () => {
    const migrated = await freshDatabase("catalog_migrated");
    await applyMigrations(migrated.url);
    const reference = await freshDatabase("catalog_reference");
    const script = await prismaEngine({ op: "diff", serverUrl, from: "empty", to: "schema" });
    await withClient(reference.url, (client) => client.query(script));

    const actual = await catalog(migrated.url, ["_prisma_migrations", ...BEYOND_SCHEMA_PRISMA]);
    expect(actual).toEqual(await catalog(reference.url));
    // Guard against two equally empty catalogs: every @@map'ed table of schema.prisma is there.
    const mapped = [...readFileSync(defaultSchemaPath, "utf8").matchAll(/@@map\("([^"]+)"\)/g)].map((m) => m[1]);
    expect(mapped.length).toBeGreaterThan(0);
    expect(actual.tables).toEqual(expect.arrayContaining(mapped.map((table_name) => ({ table_name }))));
  });
});

describe("parity with Prisma's engine", () => {
  const dbs: TestDatabase[] = [];
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.drop();
  });

  it("Prisma's status sees migrations applied here as applied, with nothing edited or failed", async () => {
    const db = await createTestDatabase("parity_ours", { migrated: false });
    dbs.push(db);
    await applyMigrations(db.url);
    await expect(prismaEngine({ op: "diagnose", serverUrl, databaseUrl: db.url })).resolves.toEqual({
      editedMigrationNames: [],
      failedMigrationNames: [],
      hasMigrationsTable: true,
      history: null,
    });
  });

  it("migrations applied by Prisma's deploy are seen as applied here, in an identical _prisma_migrations table", async () => {
    const prismas = await createTestDatabase("parity_prisma", { migrated: false });
    const ours = await createTestDatabase("parity_table", { migrated: false });
    dbs.push(prismas, ours);
    await expect(prismaEngine({ op: "apply", serverUrl, databaseUrl: prismas.url })).resolves.toEqual(repoMigrations);
    await expect(migrationStatus(prismas.url)).resolves.toEqual({ applied: repoMigrations, pending: [], problems: [] });
    await expect(applyMigrations(prismas.url)).resolves.toEqual({ applied: [] });

    await applyMigrations(ours.url);
    const bookkeeping = async (url: string): Promise<unknown> => {
      const facts = await catalog(url);
      const only = (rows: unknown[]): unknown[] =>
        rows.filter((row) => JSON.stringify(row).includes("_prisma_migrations"));
      const rows = await withClient(url, (client) =>
        client.query(`SELECT migration_name, checksum, logs, rolled_back_at, applied_steps_count,
                             finished_at IS NOT NULL AS finished FROM "_prisma_migrations" ORDER BY migration_name`),
      );
      return {
        columns: only(facts.columns!),
        indexes: only(facts.indexes!),
        constraints: only(facts.constraints!),
        rows: rows.rows,
      };
    };
    expect(await bookkeeping(ours.url)).toEqual(await bookkeeping(prismas.url));
  });
});
