/**
 * Applies or inspects the repository's migrations on the database DATABASE_DIRECT_URL names, or DATABASE_URL when it
 * is unset. Plain pg: no Prisma engine. Migrations need a session of their own (the migration lock is a session
 * advisory lock, its timeout a session setting), which a pooler in transaction mode does not give: with DATABASE_URL
 * naming PgBouncer, DATABASE_DIRECT_URL names PostgreSQL itself (docs/pooling.md).
 *   deploy                      create the database if missing, apply pending migrations
 *   status                      list applied and pending migrations and any drift (exit 1 unless up to date)
 *   resolve --rolled-back NAME  mark a failed migration rolled back so the next deploy retries it
 * Options: --migrations-dir DIR (default: the repository's prisma/migrations).
 */
import { parseArgs } from "node:util";
import { applyMigrations, markRolledBack, MigrationError, migrationStatus } from "./applier";
import { databaseName, ensureDatabase } from "./database";
import { defaultMigrationsDir } from "./migration-files";

const USAGE = "usage: cli.ts deploy | status | resolve --rolled-back <migration> [--migrations-dir <dir>]";

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: { "migrations-dir": { type: "string" }, "rolled-back": { type: "string" } },
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${USAGE}`);
  }
}

async function main(args: string[]): Promise<number> {
  const { positionals, values } = parse(args);
  const [command] = positionals;
  const migrationsDir = values["migrations-dir"] ?? defaultMigrationsDir;
  const databaseUrl = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
  if (!databaseUrl) {
    throw new Error(
      "DATABASE_URL is not set: set it to the database to migrate, e.g. postgresql://user@host:5432/name " +
        "(DATABASE_DIRECT_URL instead, when DATABASE_URL names a pooler)",
    );
  }
  const target = databaseName(databaseUrl);
  switch (command ?? "") {
    case "deploy": {
      if (await ensureDatabase(databaseUrl)) console.log(`created database ${target}`);
      const { applied } = await applyMigrations(databaseUrl, { migrationsDir, log: (line) => console.log(line) });
      console.log(
        applied.length === 0 ? `${target}: no pending migrations` : `${target}: applied ${applied.length} migration(s)`,
      );
      return 0;
    }
    case "status": {
      const status = await migrationStatus(databaseUrl, { migrationsDir });
      console.log(`${target}: ${status.applied.length} applied, ${status.pending.length} pending`);
      for (const name of status.pending) console.log(`  pending: ${name}`);
      for (const problem of status.problems) console.error(`  problem: ${problem}`);
      // Like `prisma migrate status`: non-zero unless the database is up to date.
      return status.problems.length === 0 && status.pending.length === 0 ? 0 : 1;
    }
    case "resolve": {
      const name = values["rolled-back"];
      if (!name) throw new Error(`resolve needs --rolled-back <migration>\n${USAGE}`);
      await markRolledBack(databaseUrl, name);
      console.log(`${target}: marked ${name} rolled back`);
      return 0;
    }
    default:
      throw new Error(USAGE);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof MigrationError) {
      console.error(`migrate: ${error.problems.length} problem(s):`);
      for (const problem of error.problems) console.error(`  - ${problem}`);
    } else {
      console.error(`migrate: ${error instanceof Error ? error.message : String(error)}`);
    }
    process.exit(1);
  },
);
