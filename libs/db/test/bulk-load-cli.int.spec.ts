/**
 * `pnpm db:bulk-load` as a newcomer runs it: help without a database, only the registry's time-series aspects, and --end
 * as an exclusive upper bound.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { DAY_MILLIS } from "../src";
import { createTestDatabase, type TestDatabase } from "../src/testing";

const cliPath = path.join(__dirname, "../src/timeseries/bulk-load.cli.ts");
/** Each case starts the CLI under tsx (a second or more on a busy machine) before it does anything. */
const CLI_CASE_MS = 30_000;

function cli(args: string[], databaseUrl?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  return new Promise((resolve) => {
    execFile(process.execPath, [require.resolve("tsx/cli"), cliPath, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("db:bulk-load", () => {
  it(
    "answers --help without DATABASE_URL, explaining every option",
    async () => {
      const run = await cli(["--help"]);
      expect(run.code).toBe(0);
      for (const option of ["--entity", "--aspect", "--rows", "--days", "--urns", "--end"]) {
        expect(run.stdout).toContain(option);
      }
      // its example loads where pnpm start's system reads (scripts/local-services.ts), not a database it never sees
      expect(run.stdout).toContain("DATABASE_URL=postgresql://postgres@127.0.0.1:54329/metadata_admin");
    },
    CLI_CASE_MS,
  );

  it(
    "names a missing option, and how to get help, with exit code 2",
    async () => {
      const run = await cli(["--aspect", "datasetProfile", "--rows", "10"]);
      expect(run).toMatchObject({ code: 2, stderr: expect.stringContaining("--entity is required") });
      expect(run.stderr).toContain("--help");
    },
    CLI_CASE_MS,
  );

  describe("with a database", () => {
    let testDb: TestDatabase;
    beforeAll(async () => {
      testDb = await createTestDatabase("bulk_load_cli");
    });
    afterAll(() => testDb.drop());

    it(
      "refuses an aspect the entity registry does not hold, naming the known ones, and writes nothing",
      async () => {
        const run = await cli(["--entity", "dataset", "--aspect", "nope", "--rows", "10"], testDb.url);
        expect(run).toMatchObject({
          code: 2,
          stderr: expect.stringContaining("No time-series aspect 'nope' for entity type 'dataset'; known: "),
        });
        expect(run.stderr).toContain("dataset/datasetProfile");
        const pool = new pg.Pool({ connectionString: testDb.url, max: 1 });
        try {
          const { rows } = await pool.query("SELECT 1 FROM timeseries.aspect_table WHERE aspect_name = 'nope'");
          expect(rows).toEqual([]);
        } finally {
          await pool.end();
        }
      },
      CLI_CASE_MS,
    );

    it(
      "loads every row before --end, over --days UTC days ending with the day of --end",
      async () => {
        const end = 1_700_864_000_000; // 2023-11-24T22:13:20Z: mid-day
        const run = await cli(
          ["--entity", "dataset", "--aspect", "datasetProfile", "--rows", "5000", "--days", "3", "--end", String(end)],
          testDb.url,
        );
        expect(run).toMatchObject({ code: 0, stdout: expect.stringContaining("loaded 5000 rows into 3 partitions") });
        const pool = new pg.Pool({ connectionString: testDb.url, max: 1 });
        try {
          const { rows: tables } = await pool.query<{ table_name: string }>(
            "SELECT table_name FROM timeseries.aspect_table WHERE entity_type = 'dataset' AND aspect_name = 'datasetProfile'",
          );
          const { rows } = await pool.query<{ n: string; first: string; last: string }>(
            `SELECT count(*) AS n, min(timestamp_millis) AS first, max(timestamp_millis) AS last
             FROM timeseries."${tables[0]!.table_name}"`,
          );
          expect(Number(rows[0]!.n)).toBe(5000);
          expect(Number(rows[0]!.last)).toBeLessThan(end);
          expect(Number(rows[0]!.first)).toBe(Math.floor(end / DAY_MILLIS) * DAY_MILLIS - 2 * DAY_MILLIS);
        } finally {
          await pool.end();
        }
      },
      CLI_CASE_MS,
    );
  });
});
