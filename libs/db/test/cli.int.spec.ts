/** The migrate CLI as deployments run it: `tsx libs/db/src/migrate/cli.ts deploy|status` with DATABASE_URL. */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { quoteIdent, withDatabase } from "../src/migrate/database";
import { createTestDatabase, type TestDatabase } from "../src/testing";
import { copyMigrations, removeDir, writeMigration } from "./support/migrations-dir";

const serverUrl = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const cliPath = path.join(__dirname, "../src/migrate/cli.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], databaseUrl: string | undefined): Promise<Run> {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  return new Promise((resolve) => {
    execFile(process.execPath, [require.resolve("tsx/cli"), cliPath, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  await admin.end();
}

describe("migrate cli", () => {
  it("deploy creates a missing database, migrates it, and status then reports it up to date", async () => {
    const name = `mdp_test_cli_created_${randomBytes(5).toString("hex")}`;
    const url = withDatabase(serverUrl, name);
    try {
      const deploy = await cli(["deploy"], url);
      expect(deploy).toMatchObject({ code: 0, stdout: expect.stringContaining(`created database ${name}`) });
      expect(deploy.stdout).toMatch(/applied \d+ migration\(s\)/);
      await expect(cli(["deploy"], url)).resolves.toMatchObject({
        code: 0,
        stdout: expect.stringContaining("no pending migrations"),
      });
      await expect(cli(["status"], url)).resolves.toMatchObject({
        code: 0,
        stdout: expect.stringContaining(" 0 pending"),
      });
    } finally {
      await dropDatabase(name);
    }
  });

  it("refuses to run without DATABASE_URL, naming the variable", async () => {
    const run = await cli(["deploy"], undefined);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("DATABASE_URL is not set");
  });

  describe("on drift", () => {
    let db: TestDatabase;
    let dir: string;
    beforeEach(async () => {
      db = await createTestDatabase("cli_drift", { migrated: false });
      dir = copyMigrations();
    });
    afterEach(async () => {
      await db.drop();
      removeDir(dir);
    });

    it("status exits 1 listing pending migrations", async () => {
      const run = await cli(["status", "--migrations-dir", dir], db.url);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("pending: ");
    });

    it("deploy and status exit 1 naming an edited migration", async () => {
      writeMigration(dir, "29990101000000_later", `CREATE TABLE "later" ("id" INTEGER);\n`);
      expect((await cli(["deploy", "--migrations-dir", dir], db.url)).code).toBe(0);
      writeMigration(dir, "29990101000000_later", `CREATE TABLE "later" ("id" BIGINT);\n`);
      for (const command of ["deploy", "status"]) {
        const run = await cli([command, "--migrations-dir", dir], db.url);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain("migration 29990101000000_later was modified after it was applied");
      }
    });

    it("deploy exits 1 naming a failed migration, and resolve --rolled-back lets a fixed one apply", async () => {
      writeMigration(dir, "29990101000000_broken", `SELECT 1/0;\n`);
      const failed = await cli(["deploy", "--migrations-dir", dir], db.url);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain("migration 29990101000000_broken failed and was rolled back: division by zero");
      writeMigration(dir, "29990101000000_broken", `SELECT 1;\n`);
      expect((await cli(["deploy", "--migrations-dir", dir], db.url)).stderr).toContain(
        "migration 29990101000000_broken failed",
      );
      expect((await cli(["resolve", "--rolled-back", "29990101000000_broken"], db.url)).code).toBe(0);
      await expect(cli(["deploy", "--migrations-dir", dir], db.url)).resolves.toMatchObject({ code: 0 });
      await expect(cli(["status", "--migrations-dir", dir], db.url)).resolves.toMatchObject({ code: 0 });
    });
  });
});
