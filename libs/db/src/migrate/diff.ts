/**
 * Developer tool: Prisma's own schema engine (Wasm build, see schema-engine.ts) without the native binary.
 *   create <name> [--allow-empty]  write prisma/migrations/<timestamp>_<name>/migration.sql: the SQL from the schema
 *                                  the existing migrations build to schema.prisma, i.e. `prisma migrate diff
 *                                  --from-migrations --to-schema --script` (the engine's createMigration, behind
 *                                  `migrate dev`, does not support an external shadow database in the Wasm build)
 *   check [--database-url URL]     exit 2 and print the SQL when schema.prisma differs from what the migrations build
 *                                  (or, with --database-url, from that database); exit 0 when they match
 *   sql --from-empty               print the SQL that builds schema.prisma from nothing
 * The PostgreSQL server comes from DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres). Its databases
 * are never written: the engine works in throwaway databases it creates and drops (see schema-engine.ts).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { LOCKFILE_CONTENT, LOCKFILE_NAME, readMigrations } from "./migration-files";
import { defaultSchemaPath, withSchemaEngine } from "./schema-engine";

const USAGE = "usage: diff.ts create <name> [--allow-empty] | check [--database-url <url>] | sql --from-empty";

/** Whether a script has anything besides comments (an empty migration is "-- This is an empty migration."). */
function hasStatements(script: string): boolean {
  return (
    script
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/--.*$/gm, "")
      .trim().length > 0
  );
}

/** What Prisma writes into a migration that has no steps. */
const EMPTY_MIGRATION = "-- This is an empty migration.";

/** Prisma's migration folder prefix: the UTC time as YYYYMMDDHHMMSS. */
function timestamp(now: Date): string {
  return now.toISOString().replace(/\D/g, "").slice(0, 14);
}

/** Migration names as Prisma makes them: lower case, words joined by underscores. */
function slug(name: string): string {
  const slugged = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  if (!slugged) throw new Error(`migration name ${JSON.stringify(name)} has no letters or digits\n${USAGE}`);
  return slugged.slice(0, 200); // the name column is varchar(255), with the timestamp prefix
}

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: {
        "allow-empty": { type: "boolean" },
        "database-url": { type: "string" },
        "from-empty": { type: "boolean" },
      },
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${USAGE}`);
  }
}

async function main(args: string[]): Promise<number> {
  const { positionals, values } = parse(args);
  const [command, name] = positionals;
  const serverUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const schemaPath = defaultSchemaPath;
  const migrationsDir = path.resolve(path.dirname(schemaPath), "migrations");
  switch (command ?? "") {
    case "create": {
      if (!name) throw new Error(USAGE);
      const script = await withSchemaEngine({ serverUrl, schemaPath, migrationsDir }, (engine) =>
        engine.diff("migrations", "schema"),
      );
      if (!hasStatements(script) && !values["allow-empty"]) {
        console.log(
          "schema.prisma matches the existing migrations: nothing to create (--allow-empty writes one anyway)",
        );
        return 0;
      }
      const created = { name: `${timestamp(new Date())}_${slug(name)}`, script: script || EMPTY_MIGRATION };
      const last = readMigrations(migrationsDir).at(-1)?.name;
      if (last && created.name.localeCompare(last) <= 0) {
        throw new Error(`${created.name} would sort before the existing ${last}: is the clock right?`);
      }
      mkdirSync(path.join(migrationsDir, created.name), { recursive: true });
      writeFileSync(path.join(migrationsDir, created.name, "migration.sql"), created.script);
      if (!existsSync(path.join(migrationsDir, LOCKFILE_NAME))) {
        writeFileSync(path.join(migrationsDir, LOCKFILE_NAME), LOCKFILE_CONTENT);
      }
      console.log(`wrote ${path.relative(process.cwd(), path.join(migrationsDir, created.name, "migration.sql"))}`);
      return 0;
    }
    case "check": {
      const databaseUrl = values["database-url"];
      const script = await withSchemaEngine(
        { serverUrl: databaseUrl ?? serverUrl, databaseUrl, schemaPath, migrationsDir },
        (engine) => engine.diff(databaseUrl ? "database" : "migrations", "schema"),
      );
      if (!hasStatements(script)) {
        console.log(`${databaseUrl ? "the database matches" : "the migrations match"} schema.prisma`);
        return 0;
      }
      console.log(script);
      console.error(
        databaseUrl
          ? "the database differs from schema.prisma (the SQL above would align it)"
          : "schema.prisma has changes no migration contains: run pnpm --filter @mdp/db migration:create <name>",
      );
      return 2;
    }
    case "sql": {
      if (!values["from-empty"]) throw new Error(USAGE);
      process.stdout.write(
        await withSchemaEngine({ serverUrl, schemaPath, migrationsDir }, (engine) => engine.diff("empty", "schema")),
      );
      return 0;
    }
    default:
      throw new Error(USAGE);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`diff: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
