/**
 * `pnpm start` (scripts/start.ts), the README's first command, against this test's own database and queue prefix:
 * what it says, and when.
 */
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { createTestDatabase } from "@mdp/db/testing";
import { typeScriptLoaderArgs } from "../../scripts/service-command";
import { freePort, uniqueName, waitFor } from "../support/services";

const ROOT = path.resolve(__dirname, "..", "..");
/** Four services compile their TypeScript at once on start: on a loaded 2-core machine that takes tens of seconds. */
const STARTED_WITHIN_MS = 60_000;

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [...typeScriptLoaderArgs(ROOT), path.join(ROOT, "scripts", "start.ts")], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe("pnpm start", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase("e2e_start");
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      QUEUE_PREFIX: uniqueName("e2e-start"),
      // any free monitoring port: the defaults (8081-8083) may be taken by a system running beside the tests
      TRUNCATION_WORKER_PORT: "0",
      EVALUATION_WORKER_PORT: "0",
      WEBHOOK_WORKER_PORT: "0",
    };
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("refuses a bad setting before it starts anything, naming it", async () => {
    const run = start({ ...env, PORT: "abc" });
    expect(await run.exited).toBe(78);
    expect(run.output()).toContain("Invalid configuration: PORT must be a whole number");
    expect(run.output()).not.toMatch(/Migrations up to date|Applied migrations|Gateway: /);
  });

  it("refuses a port in use before it starts anything, saying so", async () => {
    const taken = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
    try {
      const run = start({ ...env, PORT: String(port) });
      expect(await run.exited).toBe(1);
      expect(run.output()).toContain(
        `pnpm start: 127.0.0.1:${port} is in use by another process: stop it, or set PORT to a free port`,
      );
      expect(run.output()).not.toMatch(/Migrations up to date|Applied migrations|Gateway: /);
    } finally {
      taken.close();
    }
  });

  it.each(["info", "warn"])(
    "says how to use the system once the gateway answers, at LOG_LEVEL=%s, and stops everything on SIGTERM",
    async (level) => {
      const port = await freePort();
      // At warn, REDIS_URL is left empty, which counts as unset: a private Redis is started (and stopped) for it.
      const run = start({
        ...env,
        PORT: String(port),
        LOG_LEVEL: level,
        ...(level === "warn" ? { REDIS_URL: "" } : {}),
      });
      try {
        await waitFor("the how-to", async () => run.output().includes("Gateway: "), STARTED_WITHIN_MS);
        const output = run.output();
        if (level === "info") {
          expect(output.indexOf("Gateway: ")).toBeGreaterThan(output.indexOf('"msg":"gateway listening"'));
        }
        expect(output).toContain(`Gateway: http://127.0.0.1:${port}`);
        expect(output).not.toContain("Database: "); // a DATABASE_URL of the operator's own is not printed
        expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
      } finally {
        run.child.kill("SIGTERM");
      }
      expect(await run.exited).toBe(0);
    },
    2 * STARTED_WITHIN_MS,
  );

  it(
    "restarts a service killed with SIGKILL while the others keep answering, and restarts nothing on SIGTERM",
    async () => {
      const port = await freePort();
      const run = start({ ...env, PORT: String(port) });
      const health = `http://127.0.0.1:${port}/health`;
      const workerPids = () =>
        [...run.output().matchAll(/pnpm start: evaluation-worker started \(pid (\d+)\)/g)].map((match) =>
          Number(match[1]),
        );
      const workerReadyLines = () => run.output().match(/\[evaluation-worker\] .*"msg":"worker running"/g)?.length ?? 0;
      let polling = true;
      const answers: number[] = [];
      try {
        await waitFor("the how-to", async () => run.output().includes("Gateway: "), STARTED_WITHIN_MS);
        await waitFor("the evaluation worker", async () => workerReadyLines() === 1, STARTED_WITHIN_MS);
        const [killed] = workerPids();
        // /health is asked throughout: the gateway must not notice the worker's death.
        const poller = (async () => {
          while (polling)
            answers.push(
              await fetch(health).then(
                (res) => res.status,
                () => 0,
              ),
            );
        })();
        process.kill(killed!, "SIGKILL");
        await waitFor("the evaluation worker to come back", async () => workerReadyLines() === 2, 30_000);
        polling = false;
        await poller;
        const [, restarted] = workerPids();
        expect(restarted).toBeGreaterThan(0);
        expect(restarted).not.toBe(killed);
        expect(run.output()).toMatch(
          new RegExp(
            `evaluation-worker \\(pid ${killed}\\) was killed by SIGKILL after [\\d.]+ s; restarting it in 0.5 s \\(crash 1 in a row\\)`,
          ),
        );
        expect(answers.length).toBeGreaterThan(0);
        expect(answers.filter((status) => status !== 200)).toEqual([]);
        // The other services kept their processes: each was started once.
        expect(run.output().match(/pnpm start: gateway started/g)).toHaveLength(1);
        expect(run.output().match(/pnpm start: truncation-worker started/g)).toHaveLength(1);
        expect(run.output().match(/pnpm start: webhook-worker started/g)).toHaveLength(1);
      } finally {
        polling = false;
        run.child.kill("SIGTERM");
      }
      expect(await run.exited).toBe(0);
      const afterStop = run.output().slice(run.output().lastIndexOf('"msg":"worker running"'));
      for (const name of ["gateway", "truncation-worker", "evaluation-worker", "webhook-worker"]) {
        expect(afterStop).toMatch(new RegExp(`pnpm start: ${name} \\(pid \\d+\\) stopped \\(code 0\\)`));
      }
      expect(afterStop).not.toContain("restarting it in");
    },
    3 * STARTED_WITHIN_MS,
  );
});
