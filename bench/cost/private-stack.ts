/**
 * A PostgreSQL and a Redis of the cost benchmark's own, on free ports, so that every statement, command and CPU second
 * they count is the benchmark's: the shared servers carry other people's traffic. PostgreSQL runs with
 * pg_stat_statements (top-level statements, utility ones such as BEGIN and COMMIT included); Redis reports
 * `INFO commandstats`.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { Client } from "pg";
import { applyMigrations, ensureDatabase } from "@mdp/db";
import { freePort, waitFor } from "../../test/support/services";

const asRoot = process.getuid?.() === 0;
/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user. */
const asServerUser = (command: string, args: string[]): [string, string[]] =>
  asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];

function run(command: string, args: string[]): void {
  const [cmd, argv] = asServerUser(command, args);
  const result = spawnSync(cmd, argv, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${result.stderr || result.stdout}`);
}

function postgresBin(name: string): string {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  throw new Error(`${name} not found: install PostgreSQL (Debian: apt-get install -y postgresql postgresql-contrib)`);
}

export interface StatementCount {
  /** top-level statements executed in the application database */
  total: number;
  /** of which transaction control and session settings (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, SET) */
  control: number;
}

export interface CommandCount {
  /** every command Redis ran, those run by Lua scripts included (Redis 7 counts both) */
  total: number;
  /** of which script calls (EVALSHA, EVAL, FCALL): BullMQ's work is mostly inside these */
  scripts: number;
}

export interface PrivateStack {
  databaseUrl: string;
  redisUrl: string;
  postmasterPid: number;
  redisPid: number;
  statements(): Promise<StatementCount>;
  /** each statement's calls and execution time so far (ms), by its normalized text */
  statementTimes(): Promise<Map<string, { calls: number; ms: number }>>;
  commands(): Promise<CommandCount>;
  /** a streaming hot standby of the PostgreSQL (pg_basebackup -R), stopped with the stack */
  startStandby(): Promise<{ databaseUrl: string; postmasterPid: number }>;
  stop(): Promise<void>;
}

const CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|START TRANSACTION)\b/i;

export async function startPrivateStack(): Promise<PrivateStack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mdp-cost-"));
  if (asRoot) spawnSync("chown", ["-R", "postgres:postgres", dir]);
  const data = path.join(dir, "pg");
  run(postgresBin("initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  const [pgPort, redisPort] = [await freePort(), await freePort()];
  // fsync off as in the other private servers: what is measured is CPU, and disk flushes on a shared machine only
  // add waits. Larger pg_stat_statements.max: truncation names every partition in its statements.
  const options = [
    `-p ${pgPort}`,
    "-c listen_addresses=127.0.0.1",
    "-c unix_socket_directories=''",
    "-c fsync=off",
    "-c shared_preload_libraries=pg_stat_statements",
    "-c pg_stat_statements.max=20000",
    "-c pg_stat_statements.track=top",
  ].join(" ");
  const pgCtl = postgresBin("pg_ctl");
  run(pgCtl, ["-D", data, "-o", options, "-l", path.join(dir, "pg.log"), "-w", "start"]);
  const adminUrl = `postgresql://postgres@127.0.0.1:${pgPort}/postgres`;
  const databaseUrl = `postgresql://postgres@127.0.0.1:${pgPort}/metadata_admin`;
  const postmasterPid = Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]);

  const redis: ChildProcess = spawn(
    "redis-server",
    ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const stats = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  stats.on("error", () => undefined); // refused until the server listens: waitFor below retries
  const admin = new Client({ connectionString: adminUrl });
  const standbyData = path.join(dir, "standby");
  const stop = async () => {
    spawnSync(...asServerUser(pgCtl, ["-D", standbyData, "-m", "immediate", "-w", "stop"])); // none: no matter
    await admin.end().catch(() => undefined);
    stats.disconnect();
    if (redis.exitCode === null && redis.signalCode === null) {
      const exited = new Promise((resolve) => redis.once("exit", resolve));
      redis.kill("SIGTERM");
      await exited;
    }
    spawnSync(...asServerUser(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor("the private Redis", async () => {
      await stats.connect().catch(() => undefined);
      return (await stats.ping()) === "PONG";
    });
    await ensureDatabase(databaseUrl);
    await applyMigrations(databaseUrl);
    await admin.connect();
    // The statistics are read from the `postgres` database, so the reads are not counted with the application's.
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    databaseUrl,
    redisUrl,
    postmasterPid,
    redisPid: redis.pid!,
    statements: async () => {
      const { rows } = await admin.query<{ query: string; calls: string }>(
        `SELECT query, calls FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'metadata_admin')`,
      );
      let total = 0;
      let control = 0;
      for (const row of rows) {
        total += Number(row.calls);
        if (CONTROL.test(row.query)) control += Number(row.calls);
      }
      return { total, control };
    },
    statementTimes: async () => {
      const { rows } = await admin.query<{ query: string; calls: string; ms: number }>(
        `SELECT query, calls, total_exec_time AS ms FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'metadata_admin')`,
      );
      const times = new Map<string, { calls: number; ms: number }>();
      for (const row of rows) {
        const seen = times.get(row.query) ?? { calls: 0, ms: 0 };
        times.set(row.query, { calls: seen.calls + Number(row.calls), ms: seen.ms + row.ms });
      }
      return times;
    },
    commands: async () => {
      const info = await stats.info("commandstats");
      let total = 0;
      let scripts = 0;
      for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        const [, name, calls] = match as unknown as [string, string, string];
        if (name === "info") continue; // this reader's own
        total += Number(calls);
        if (["evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro"].includes(name)) scripts += Number(calls);
      }
      return { total, scripts };
    },
    startStandby: async () => {
      const port = await freePort();
      run(postgresBin("pg_basebackup"), [
        ...["-h", "127.0.0.1", "-p", String(pgPort), "-U", "postgres", "-D", standbyData, "-R", "-X", "stream"],
        ...["-c", "fast"],
      ]);
      const standbyOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off`;
      run(pgCtl, ["-D", standbyData, "-o", standbyOptions, "-l", path.join(dir, "standby.log"), "-w", "start"]);
      const pid = Number(readFileSync(path.join(standbyData, "postmaster.pid"), "utf8").split("\n")[0]);
      return { databaseUrl: `postgresql://postgres@127.0.0.1:${port}/metadata_admin`, postmasterPid: pid };
    },
    stop,
  };
}
