/**
 * The README's test command: makes sure PostgreSQL and Redis are reachable (starting private ones under .data/ when
 * nothing is), runs every jest test but the production build's (test/build: `pnpm test:build`, after `pnpm build`),
 * and ends with the plain line `N passed, N failed` that CI reads.
 *
 * A whole run (no arguments) ends with the Redis Cluster stage: the service-level tests in CLUSTER_SUITE again, with
 * REDIS_URL naming a private 3-master Redis Cluster (scripts/redis-cluster.ts). `pnpm test <paths>` runs the given
 * files alone, on the single Redis; `pnpm test:cluster [paths]` runs only the cluster stage (CLUSTER_SUITE, or the
 * given files). `--tier unit|integration|e2e|build` (`pnpm test:unit`, ...) runs one tier of jest.config.js alone; the unit
 * tier needs no PostgreSQL or Redis, so none is started for it. Other runs first make sure of a Chromium for the browser
 * tests (scripts/chromium.ts: Debian's package, installed when missing and run as root), passed on as CHROMIUM_PATH.
 * A run in which jest had to force a worker to exit (a test file left a timer or a connection open) says so at its end;
 * `--find-leaks` (`pnpm test --find-leaks <paths>`) then names what was left and where it was created, in .data/leaks/
 * (scripts/find-leaks.cjs).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { CHROMIUM_MISSING, ensureChromium } from "./chromium";
import { ensureLocalServices } from "./local-services";
import { startRedisCluster } from "./redis-cluster";

/**
 * What must hold on a Redis Cluster too: tokens and revocation across gateways, truncation, evaluate, runTest, the
 * queue dashboard, scheduled tests with their schedule sync, chores once per cluster, the write positions the gateways
 * share for read-your-writes, and every replica arrangement (processes on one PostgreSQL and the cluster). The tests
 * that stop, pause or break their own private Redis server are not here: they need a single server to break.
 */
export const CLUSTER_SUITE = [
  "test/e2e/replicas.e2e.spec.ts",
  "test/e2e/scale-out.e2e.spec.ts",
  "test/e2e/foundation.e2e.spec.ts",
  "services/gateway/test/tokens.int.spec.ts",
  "services/gateway/test/truncation-requests.int.spec.ts",
  "services/gateway/test/truncation-tasks.int.spec.ts",
  "services/gateway/test/truncation-timeouts.int.spec.ts",
  "services/gateway/test/metadata-tests-evaluate.int.spec.ts",
  "services/gateway/test/metadata-tests-runs.int.spec.ts",
  "services/evaluation-worker/test/run-test.int.spec.ts",
  "services/gateway/test/queue-dashboard.int.spec.ts",
  "services/gateway/test/scheduled-tests.int.spec.ts",
  "libs/queues/test/chores.int.spec.ts",
  "libs/queues/test/write-positions.int.spec.ts",
];

interface Outcome {
  passed: number;
  failed: number;
  exitCode: number;
}

/** jest's line for a test file that left a timer or connection behind: repeated at the end of the run, so it is seen. */
const LEAK_LINE = "A worker process has failed to exit gracefully";

async function runJest(root: string, args: string[], env: Record<string, string>, findLeaks = false): Promise<Outcome> {
  // scripts/find-leaks.cjs writes one report per worker that something kept alive (emptied at the start of main)
  const leaksDir = path.join(root, ".data", "leaks");
  // One results file per run: several `pnpm test` may run at once in one checkout.
  const resultsFile = path.join(root, ".data", `jest-results-${process.pid}-${Date.now()}.json`);
  const run = spawn(
    process.execPath,
    [require.resolve("jest/bin/jest"), "--json", `--outputFile=${resultsFile}`, ...args],
    {
      cwd: root,
      stdio: ["inherit", "pipe", "pipe"],
      env: { ...process.env, ...env, NODE_ENV: "test" },
    },
  );
  // jest's output is passed through as it comes, and read for the leak line.
  let leaked = false;
  const watch = (from: NodeJS.ReadableStream, to: NodeJS.WritableStream) => {
    let tail = "";
    from.on("data", (chunk: Buffer) => {
      to.write(chunk);
      const text = tail + chunk.toString("utf8");
      if (text.includes(LEAK_LINE)) leaked = true;
      tail = text.slice(-LEAK_LINE.length); // the line may straddle two chunks
    });
  };
  watch(run.stdout, process.stdout);
  watch(run.stderr, process.stderr);
  const [status] = (await once(run, "close")) as [number | null];
  let passed = 0;
  let failed = 0;
  try {
    const results = JSON.parse(readFileSync(resultsFile, "utf8")) as { numPassedTests: number; numFailedTests: number };
    passed = results.numPassedTests;
    failed = results.numFailedTests;
  } catch {
    failed = 1;
  }
  rmSync(resultsFile, { force: true });
  const exitCode = status ?? 1;
  if (exitCode !== 0 && failed === 0) failed = 1; // a suite that failed to load counts as a failure
  if (leaked) {
    // Reported, not counted as a failure. The known leaks are fixed (ioredis's 2 s timer on a socket already closed,
    // armed when a connection is dropped while it reconnects: closeRedis, closeWorker, ClosedSocketAwareConnector in
    // @mdp/queues). jest's line is not proof of one: it forces out a worker not gone 500 ms after being told to end,
    // measured in jest's own process, and an integration run on a loaded machine printed it with nothing open in
    // either worker when told to end (--find-leaks wrote no report).
    process.stderr.write(
      "\nA worker process was forced to exit (jest's line above): a test file may have left a timer or connection " +
        "open; `pnpm test --find-leaks <paths>` names it.\n",
    );
  }
  if (findLeaks) {
    const reports = existsSync(leaksDir) ? readdirSync(leaksDir) : [];
    process.stderr.write(
      reports.length > 0
        ? `\nStill open 400 ms after jest told its worker to end: ${reports.map((f) => path.join(leaksDir, f)).join(", ")}\n`
        : "\nNo worker had a timer or connection open 400 ms after jest told it to end.\n",
    );
  }
  return { passed, failed, exitCode };
}

async function main(): Promise<void> {
  const root = path.resolve(__dirname, "..");
  const argv = process.argv.slice(2);
  const clusterOnly = argv.includes("--cluster");
  // every jest worker records where its timers and handles were created (scripts/find-leaks.cjs)
  const findLeaks = argv.includes("--find-leaks");
  const leakEnv: Record<string, string> = findLeaks
    ? {
        NODE_OPTIONS: [
          process.env.NODE_OPTIONS,
          `--require ${JSON.stringify(path.join(root, "scripts", "find-leaks.cjs"))}`,
        ]
          .filter(Boolean)
          .join(" "),
      }
    : {};
  const tierAt = argv.indexOf("--tier");
  const tier = tierAt >= 0 ? argv[tierAt + 1] : undefined;
  if (tierAt >= 0 && !["unit", "integration", "e2e", "build"].includes(tier ?? "")) {
    throw new Error(`--tier must be unit, integration, e2e or build, got ${tier ?? "nothing"}`);
  }
  const args = argv.filter(
    (arg, i) => arg !== "--cluster" && arg !== "--find-leaks" && (tierAt < 0 || (i !== tierAt && i !== tierAt + 1)),
  );
  mkdirSync(path.join(root, ".data"), { recursive: true });
  if (findLeaks) rmSync(path.join(root, ".data", "leaks"), { recursive: true, force: true });
  if (tier === "unit") {
    const outcome = await runJest(root, [...args, "--selectProjects", "unit"], leakEnv, findLeaks);
    process.stdout.write(`\n${outcome.passed} passed, ${outcome.failed} failed\n`);
    process.exit(outcome.exitCode);
  }
  const chromium = ensureChromium();
  if (!chromium) process.stderr.write(`${CHROMIUM_MISSING} The browser tests will fail.\n`);
  const browser: Record<string, string> = chromium ? { CHROMIUM_PATH: chromium } : {};
  const services = await ensureLocalServices(root, { reuseDefaults: true });
  const outcomes: Outcome[] = [];
  try {
    if (!clusterOnly) {
      // Every tier but build (the production build's, which CI runs after `pnpm build`), unless files are named.
      const selection = tier
        ? [...args, "--selectProjects", tier]
        : args.length > 0
          ? args
          : ["--selectProjects", "unit", "integration", "e2e"];
      outcomes.push(
        await runJest(
          root,
          selection,
          {
            TEST_DATABASE_URL: services.adminDatabaseUrl,
            REDIS_URL: services.redisUrl,
            ...browser,
            ...leakEnv,
          },
          findLeaks,
        ),
      );
    }
    if (clusterOnly || (args.length === 0 && !tier)) {
      process.stdout.write("\n== the same service-level tests on a Redis Cluster\n");
      const cluster = await startRedisCluster(path.join(root, ".data"));
      try {
        const selection = clusterOnly && args.length > 0 ? args : ["--runTestsByPath", ...CLUSTER_SUITE];
        outcomes.push(
          await runJest(
            root,
            selection,
            {
              TEST_DATABASE_URL: services.adminDatabaseUrl,
              REDIS_URL: cluster.url,
              ...leakEnv,
            },
            findLeaks,
          ),
        );
      } finally {
        await cluster.stop();
      }
    }
  } finally {
    await services.stop();
  }
  const passed = outcomes.reduce((sum, o) => sum + o.passed, 0);
  const failed = outcomes.reduce((sum, o) => sum + o.failed, 0);
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exit(outcomes.find((o) => o.exitCode !== 0)?.exitCode ?? 0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n0 passed, 1 failed\n`);
  process.exit(1);
});
