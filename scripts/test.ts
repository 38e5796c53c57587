/**
 * The README's test command: makes sure PostgreSQL and Redis are reachable (starting private ones under .data/ when
 * nothing is), runs every jest test, and ends with the plain line `N passed, N failed` that CI reads.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ensureLocalServices } from "./local-services";

async function main(): Promise<void> {
  const root = path.resolve(__dirname, "..");
  const services = await ensureLocalServices(root, { reuseDefaults: true });
  const resultsFile = path.join(root, ".data", "jest-results.json");
  mkdirSync(path.dirname(resultsFile), { recursive: true });
  const run = spawnSync(
    process.execPath,
    [require.resolve("jest/bin/jest"), "--json", `--outputFile=${resultsFile}`, ...process.argv.slice(2)],
    {
      cwd: root,
      stdio: "inherit",
      env: {
        ...process.env,
        TEST_DATABASE_URL: services.adminDatabaseUrl,
        REDIS_URL: services.redisUrl,
        NODE_ENV: "test",
      },
    },
  );
  await services.stop();
  let passed = 0;
  let failed = 0;
  try {
    const results = JSON.parse(readFileSync(resultsFile, "utf8")) as { numPassedTests: number; numFailedTests: number };
    passed = results.numPassedTests;
    failed = results.numFailedTests;
  } catch {
    failed = Math.max(failed, 1);
  }
  const exitCode = run.status ?? 1;
  if (exitCode !== 0 && failed === 0) failed = 1; // a suite that failed to load counts as a failure
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exit(exitCode);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n0 passed, 1 failed\n`);
  process.exit(1);
});
