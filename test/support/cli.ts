/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it (test/e2e/cli-*.e2e.spec.ts): the real CLI process
 * (node cli/bin/mdp.cjs) against the real gateway and every worker as processes, on a database, queue prefix and config
 * dir of the test file's own. Terminal behaviour runs under a pseudo-terminal (util-linux script).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createDatabase, inTransaction, TimeseriesStore, type Database, type TimeseriesRow } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  startService,
  systemClient,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "./services";

export const ROOT = path.resolve(__dirname, "..", "..");
const MDP = path.join(ROOT, "cli", "bin", "mdp.cjs");
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const ADMIN = "urn:li:corpuser:admin";
export const NOBODY = "urn:li:corpuser:nobody";
export const DAY = 86_400_000;
/** three UTC days of datasetProfile rows: the first wholly old, the cutoff in the middle of the second */
export const DAY0 = Date.UTC(2023, 10, 1);
export const CUTOFF = DAY0 + DAY + 12 * 3_600_000;
/** one day of datasetUsageStatistics rows that a task deletes one per batch: long enough to watch and interrupt */
export const SLOW_ROWS = 20_000;
export const SLOW_SPACING = DAY / 2 / SLOW_ROWS;
/** every slow row but the last goes */
export const SLOW_CUTOFF = DAY0 + (SLOW_ROWS - 1) * SLOW_SPACING;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What a started CLI test has: the gateway's url, the config dir's home, and an admin's and a nobody's tokens. */
export interface CliServices {
  baseUrl: string;
  home: string;
  adminToken: string;
  nobodyToken: string;
}

/**
 * The gateway and the workers for one test file, and the CLI run against them. `start` in beforeAll, `stop` in
 * afterAll; `loggedIn` logs the CLI in as the admin, as the login tests leave it (mdpOnTerminal relies on it), and
 * `truncationRows` loads the rows the truncation tests delete.
 */
export function cliHarness(name: string) {
  const state = {} as CliServices & {
    db: Awaited<ReturnType<typeof createTestDatabase>>;
    database: Database;
    services: RunningService[];
  };
  const prefix = uniqueName(name);

  /** the CLI as a script runs it: no terminal, a config dir of this test's own */
  function mdp(args: string[], { env = {}, input }: { env?: Record<string, string>; input?: string } = {}) {
    const { MDP_URL: _u, MDP_TOKEN: _t, ...inherited } = process.env;
    const child = spawn(process.execPath, [MDP, ...args], {
      cwd: ROOT,
      env: { ...inherited, HOME: state.home, XDG_CONFIG_HOME: path.join(state.home, "config"), ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end(input);
    return new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  }

  /** `pnpm mdp …` from the workspace's root, as the README runs it, without a terminal */
  function pnpmMdp(args: string[], env: Record<string, string> = {}) {
    const { MDP_URL: _u, MDP_TOKEN: _t, ...inherited } = process.env;
    return spawnSync("pnpm", ["mdp", ...args], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...inherited, HOME: state.home, XDG_CONFIG_HOME: path.join(state.home, "config"), ...env },
    });
  }

  /**
   * the CLI on a terminal (a pseudo-terminal of `script`, `columns` wide, 120 by default): what it printed, keys to
   * type, its exit; `viaPnpm` runs it as `pnpm mdp …` does
   */
  function mdpOnTerminal(args: string[], { columns = 120, viaPnpm = false } = {}) {
    const quote = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
    const command = viaPnpm
      ? `exec pnpm mdp ${args.map(quote).join(" ")}`
      : `exec '${process.execPath}' ${[MDP, ...args].map(quote).join(" ")}`;
    const child = spawn("script", ["-qfec", `stty cols ${columns}; ${command}`, "/dev/null"], {
      cwd: ROOT,
      env: {
        ...process.env,
        HOME: state.home,
        XDG_CONFIG_HOME: path.join(state.home, "config"),
        MDP_URL: "",
        MDP_TOKEN: "",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    return {
      output: () => output,
      type: (keys: string) => child.stdin.write(keys),
      exited,
      /** until the terminal has shown `what` (`times` times) */
      waitFor: (what: RegExp, times = 1) =>
        waitFor(
          `the terminal to show ${what}${times > 1 ? ` ${times} times` : ""}`,
          async () => (output.match(new RegExp(what.source, "g")) ?? []).length >= times,
          30_000,
        ).catch((error: Error) => {
          throw new Error(`${error.message}; it shows:\n${output}`);
        }),
      kill: () => child.kill("SIGKILL"),
    };
  }

  async function graphql(actor: string, query: string, variables: Record<string, unknown> = {}) {
    const res = await fetch(`${state.baseUrl}/api/graphql`, {
      method: "POST",
      headers: systemClient(actor),
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data: Record<string, Record<string, unknown>> };
  }

  async function mintToken(actorUrn: string): Promise<string> {
    const { data } = await graphql(
      ADMIN,
      "mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken } }",
      // A year: the tokens mdp creates with it (a month by default) may not outlive it.
      { input: { type: "PERSONAL", actorUrn, duration: "ONE_YEAR", name: "e2e" } },
    );
    return data.createAccessToken!.accessToken as string;
  }

  async function loadRows(entityType: string, aspectName: string, rows: TimeseriesRow[]): Promise<void> {
    const store = new TimeseriesStore(state.database.pool);
    const ref = { entityType, aspectName };
    await store.prepare([{ ...ref, rows }]);
    await inTransaction(state.database.pool, (client) => store.append(client, ref, rows));
  }

  const rowsAt = (times: number[]): TimeseriesRow[] =>
    times.map((t, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:hive,t${i % 10},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t, rowCount: i }),
    }));

  const asAdmin = () => ({ MDP_URL: state.baseUrl, MDP_TOKEN: state.adminToken });

  async function start({ loggedIn = false, truncationRows = false } = {}): Promise<CliServices> {
    state.home = mkdtempSync(path.join(os.tmpdir(), "mdp-cli-"));
    state.db = await createTestDatabase(name);
    state.database = createDatabase(state.db.url);
    const port = await freePort();
    state.baseUrl = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: state.db.url, REDIS_URL, QUEUE_PREFIX: prefix, PORT: String(port) };
    const gateway = startService("gateway", env);
    state.services = [
      gateway,
      startService("truncation-worker", env),
      startService("evaluation-worker", env),
      startService("webhook-worker", env),
    ];
    await Promise.all([
      waitUntilReady(state.baseUrl, gateway),
      ...state.services.slice(1).map((worker) => waitForOutput(worker, "worker running")),
    ]);
    [state.adminToken, state.nobodyToken] = await Promise.all([mintToken(ADMIN), mintToken(NOBODY)]);
    if (truncationRows) {
      // 1,000 rows on day 0, 1,000 on day 1 (500 before the cutoff), 500 on day 2
      const spread = (day: number, n: number, span: number) =>
        Array.from({ length: n }, (_, i) => DAY0 + day * DAY + Math.floor((i * span) / n));
      await loadRows(
        "dataset",
        "datasetProfile",
        rowsAt([...spread(0, 1000, DAY), ...spread(1, 1000, DAY), ...spread(2, 500, DAY)]),
      );
      await loadRows(
        "dataset",
        "datasetUsageStatistics",
        rowsAt(Array.from({ length: SLOW_ROWS }, (_, i) => DAY0 + i * SLOW_SPACING)),
      );
    }
    if (loggedIn) {
      const login = await mdp(["login", state.baseUrl, "--token", state.adminToken]);
      if (login.code !== 0) throw new Error(`mdp login: ${login.stderr}`);
    }
    return state;
  }

  async function stop(): Promise<void> {
    await Promise.all((state.services ?? []).map((s) => s.stop()));
    await state.database?.close();
    await state.db?.drop();
    if (state.home) rmSync(state.home, { recursive: true, force: true });
  }

  return { mdp, pnpmMdp, mdpOnTerminal, graphql, mintToken, asAdmin, start, stop };
}
