/**
 * Development and test tooling only (never imported by services): drives Prisma's official schema engine, compiled to
 * WebAssembly (@prisma/schema-engine-wasm), through a pg driver adapter. The native engine binary that
 * `prisma migrate` needs cannot be downloaded here; the Wasm build is the same Rust code.
 *
 * Every database the engine may write to is a throwaway one this module creates itself, with an explicit unique name,
 * through a connection to the server's `postgres` database; each is checked with current_database() before use and
 * dropped after its pool is closed. adapter-pg's own connectToShadowDb is not used: it spreads a connection string and
 * a `database` option into one pg config, and pg lets the string win, so the "shadow" was the main database.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from "@prisma/driver-adapter-utils";
import pg from "pg";
import { databaseName, quoteIdent, withDatabase } from "./database";
import { LOCKFILE_CONTENT, LOCKFILE_NAME, readMigrations } from "./migration-files";

import type {
  DiagnoseMigrationHistoryOutput,
  DiffTarget,
  SchemaEngine as Engine,
  MigrationList,
} from "@prisma/schema-engine-wasm/schema_engine_bg";

type WasmModule = typeof import("@prisma/schema-engine-wasm/schema_engine_bg");
export type MigrationHistoryDiagnosis = DiagnoseMigrationHistoryOutput;

// The parts of the WebAssembly global used here: lib ES2023 and @types/node 20 do not declare it.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, object>) => { exports: Record<string, unknown> };
};

export const defaultSchemaPath = path.resolve(__dirname, "../../../../prisma/schema.prisma");

const PG_CHAR_OID = 18; // the one-byte "char" type of pg_catalog columns
const PG_TEXT_OID = 25;
const NO_FILTER = { externalTables: [], externalEnums: [] };

let engineClass: Promise<WasmModule["SchemaEngine"]> | undefined;

/** Instantiates the Wasm module once per process, as @prisma/internals' loader does. */
function loadEngineClass(): Promise<WasmModule["SchemaEngine"]> {
  engineClass ??= (async () => {
    // A real dynamic import: the package is ESM-only and this file compiles to CommonJS.
    const runtime: WasmModule = await import("@prisma/schema-engine-wasm/schema_engine_bg");
    const wasmFile = path.join(
      path.dirname(require.resolve("@prisma/schema-engine-wasm/schema_engine_bg")),
      "schema_engine_bg.wasm",
    );
    const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmFile)), {
      "./schema_engine_bg.js": runtime,
    });
    runtime.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return runtime.SchemaEngine;
  })();
  return engineClass;
}

/**
 * A pg pool whose results report pg_catalog's "char" columns as text: adapter-pg rejects that type (OID 18), which
 * breaks the engine's introspection queries; the values already arrive as one-character strings.
 */
function charAsTextPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // pool.end() resolves before its sockets close, so the DROP ... WITH (FORCE) that follows can terminate a
  // closing connection; that error is expected and must not crash the process as an unhandled 'error' event.
  pool.on("error", () => undefined);
  const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
  const patched = async (config: pg.QueryConfig): Promise<pg.QueryResult> => {
    const result = await query(config);
    for (const field of result.fields ?? []) if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    return result;
  };
  (pool as unknown as { query: typeof patched }).query = patched;
  return pool;
}

export interface SchemaEngineOptions {
  /** Any database URL of the server where throwaway databases are created; its own database is not used. */
  serverUrl: string;
  /**
   * The database the engine's main connection uses: read by `diff('database', …)`, written by `applyMigrations`.
   * A throwaway database when omitted, so nothing that matters is ever reachable by accident.
   */
  databaseUrl?: string;
  schemaPath?: string;
  migrationsDir?: string;
}

export type DiffSide = "empty" | "schema" | "migrations" | "database";

export interface SchemaEngineSession {
  /** SQL script turning `from` into `to` (what `prisma migrate diff --script` prints); "" when they are equal. */
  diff(from: DiffSide, to: DiffSide): Promise<string>;
  /** `prisma migrate deploy` on the main database. */
  applyMigrations(): Promise<string[]>;
  /** What `prisma migrate status` reads: the migrations folder against the main database's history. */
  diagnoseMigrationHistory(): Promise<MigrationHistoryDiagnosis>;
}

/** Runs `fn` with a schema engine session, then frees the engine, closes every pool and drops throwaway databases. */
export async function withSchemaEngine<T>(
  options: SchemaEngineOptions,
  fn: (session: SchemaEngineSession) => Promise<T>,
): Promise<T> {
  const schemaPath = options.schemaPath ?? defaultSchemaPath;
  const schema = readFileSync(schemaPath, "utf8");
  const migrationsDir = options.migrationsDir ?? path.resolve(path.dirname(schemaPath), "migrations");
  const admin = new pg.Client({ connectionString: withDatabase(options.serverUrl, "postgres") });
  await admin.connect();
  const cleanups: Array<() => Promise<void>> = [];

  /** A driver adapter on `url`, refusing to proceed unless the server confirms it is connected to `expected`. */
  async function adapterOn(url: string, expected: string, onDispose: () => Promise<void>): Promise<SqlDriverAdapter> {
    const pool = charAsTextPool(url);
    let disposed = false;
    const dispose = async (): Promise<void> => {
      if (disposed) return;
      disposed = true;
      await pool.end(); // before any DROP DATABASE: dropping a database with open connections fails
      await onDispose();
    };
    cleanups.push(dispose);
    const { rows } = await pool.query<{ db: string }>("SELECT current_database() AS db");
    if (rows[0]?.db !== expected) throw new Error(`expected to be connected to ${expected}, got ${rows[0]?.db}`);
    const adapter = await new PrismaPg(pool).connect();
    const release = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await release();
      await dispose();
    };
    return adapter;
  }

  async function throwawayAdapter(purpose: string): Promise<SqlDriverAdapter> {
    const name = `mdp_${purpose}_${process.pid}_${randomBytes(6).toString("hex")}`;
    await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
    return adapterOn(withDatabase(options.serverUrl, name), name, async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    });
  }

  const factory: SqlMigrationAwareDriverAdapterFactory = {
    provider: "postgres",
    adapterName: "@prisma/adapter-pg",
    connect: () =>
      options.databaseUrl
        ? adapterOn(options.databaseUrl, databaseName(options.databaseUrl), async () => undefined)
        : throwawayAdapter("scratch"),
    connectToShadowDb: () => throwawayAdapter("shadow"),
  };

  const migrationsList = (): MigrationList => ({
    baseDir: migrationsDir,
    // The engine insists on the lockfile; a new migrations folder does not have one yet.
    lockfile: { path: LOCKFILE_NAME, content: LOCKFILE_CONTENT },
    shadowDbInitScript: "",
    migrationDirectories: readMigrations(migrationsDir).map((migration) => ({
      path: migration.name,
      migrationFile: {
        path: "migration.sql",
        content: migration.script
          ? { tag: "ok" as const, value: migration.script.toString("utf8") }
          : { tag: "error" as const, value: "migration.sql is missing" },
      },
    })),
  });
  const schemaFiles = { files: [{ path: schemaPath, content: schema }] };
  const target = (side: DiffSide): DiffTarget => {
    switch (side) {
      case "empty":
        return { tag: "empty" };
      case "schema":
        return { tag: "schemaDatamodel", ...schemaFiles };
      case "migrations":
        return { tag: "migrations", ...migrationsList() };
      case "database":
        // Prisma 7 reads "the datasource" through the main connection (--from-url is gone).
        return { tag: "schemaDatasource", ...schemaFiles, configDir: path.dirname(schemaPath) };
    }
  };

  let engine: Engine | undefined;
  try {
    const SchemaEngine = await loadEngineClass();
    engine = (await SchemaEngine.new(
      { datamodels: [[schemaPath, schema]] },
      () => undefined, // the engine's tracing output
      bindMigrationAwareSqlAdapterFactory(factory),
    )) as Engine;
    const live = engine;
    return await fn({
      async diff(from, to) {
        const result = await live.diff({
          from: target(from),
          to: target(to),
          script: true,
          exitCode: true,
          filters: NO_FILTER,
        });
        return result.exitCode === 2 ? (result.stdout ?? "") : ""; // exit code 2 = "there is a difference"
      },
      async applyMigrations() {
        const out = await live.applyMigrations({ migrationsList: migrationsList(), filters: NO_FILTER });
        return out.appliedMigrationNames;
      },
      diagnoseMigrationHistory: () =>
        live.diagnoseMigrationHistory({
          migrationsList: migrationsList(),
          optInToShadowDatabase: false,
          filters: NO_FILTER,
        }),
    });
  } finally {
    engine?.free();
    for (const cleanup of cleanups.reverse()) {
      // Keep cleaning up; a database that could not be dropped is named so someone can drop it by hand.
      await cleanup().catch((error: unknown) => process.stderr.write(`schema engine cleanup: ${String(error)}\n`));
    }
    await admin.end();
  }
}
