import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultMigrationsDir } from "../../src/migrate/migration-files";

/** A private copy of the repository's migrations that a test may edit; remove it with rmSync when done. */
export function copyMigrations(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mdp-migrations-"));
  cpSync(defaultMigrationsDir, dir, { recursive: true });
  return dir;
}

export function writeMigration(dir: string, name: string, sql: string): void {
  mkdirSync(path.join(dir, name), { recursive: true });
  writeFileSync(path.join(dir, name, "migration.sql"), sql);
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
