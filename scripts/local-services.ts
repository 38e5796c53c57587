/**
 * Local PostgreSQL and Redis for `pnpm start` and `pnpm test` on a single machine.
 *
 * - `pnpm start` with DATABASE_URL/REDIS_URL unset runs private servers of its own: data under .data/, ports 54329
 *   and 63799, stopped again on exit; those another command started and still runs (a second `pnpm start`) are used
 *   and left running.
 * - `pnpm test` (reuseDefaults) first looks for servers at the usual 127.0.0.1:5432 (reachable as `postgres` without a
 *   password) and :6379, and starts private ones only when those do not answer.
 * Nothing is installed here: a missing binary is reported with what to install or which variable to set.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { canConnect } from "@mdp/db/server-check";

export interface LocalServices {
  /** where the application database lives */
  databaseUrl: string;
  /** a superuser connection to the server's `postgres` database (tests create their own databases from it) */
  adminDatabaseUrl: string;
  redisUrl: string;
  stop(): Promise<void>;
}

const PRIVATE_PG_PORT = 54329;
const PRIVATE_REDIS_PORT = 63799;

export async function ensureLocalServices(root: string, options: { reuseDefaults: boolean }): Promise<LocalServices> {
  const stops: Array<() => Promise<void>> = [];
  const dataDir = path.join(root, ".data");
  mkdirSync(dataDir, { recursive: true });

  let pgServer = process.env.DATABASE_URL ? null : "postgresql://postgres@127.0.0.1:5432";
  if (pgServer && !(options.reuseDefaults && (await canConnect(`${pgServer}/postgres`)))) {
    stops.push(await startPostgres(dataDir));
    pgServer = `postgresql://postgres@127.0.0.1:${PRIVATE_PG_PORT}`;
  }
  // An empty variable counts as unset, as the services read it.
  let redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";
  if (!process.env.REDIS_URL && !(options.reuseDefaults && (await isListening(6379)))) {
    stops.push(await startRedis(dataDir));
    redisUrl = `redis://127.0.0.1:${PRIVATE_REDIS_PORT}`;
  }
  const databaseUrl = process.env.DATABASE_URL || `${pgServer}/metadata_admin`;
  const admin = new URL(databaseUrl);
  admin.pathname = "/postgres";
  return {
    databaseUrl,
    adminDatabaseUrl: process.env.TEST_DATABASE_URL || admin.toString(),
    redisUrl,
    stop: async () => {
      for (const stop of stops.reverse()) await stop();
    },
  };
}

export function isListening(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function waitForPort(port: number, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await isListening(port))) {
    if (Date.now() > deadline) throw new Error(`${what} did not start listening on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function findPostgresBin(name: string): string | null {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const candidate = path.join(base, v, "bin", name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * PostgreSQL refuses to run as root, so as root the private cluster is run by the `postgres` system user. setsid
 * puts the server in a session of its own: Ctrl-C must reach the services, which still need the database while they
 * shut down, not the database itself (it is stopped last, explicitly).
 */
function asServerUser(command: string, args: string[]): [string, string[]] {
  const asUser = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", command, ...args] : [command, ...args];
  return ["setsid", ["--wait", ...asUser]];
}

/**
 * Whether `file` names the command that started a private server here, and that command is gone (killed, or its
 * terminal closed). Without the file the server is not known to be this checkout's (another checkout's, or one
 * started before the file existed): not gone, so it is left alone.
 */
function ownerGone(file: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(file, "utf8"));
  } catch {
    return false;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "EPERM"; // EPERM: it runs, as another user
  }
}

async function startPostgres(dataDir: string): Promise<() => Promise<void>> {
  const owner = path.join(dataDir, "postgres.owner");
  const listening = await isListening(PRIVATE_PG_PORT);
  // One another command started and runs (a `pnpm start`): used, and left for that command to stop. One this checkout's
  // command started and left behind when it died is this command's to stop.
  if (listening && !ownerGone(owner)) {
    process.stdout.write(`PostgreSQL (private, started by another command) on 127.0.0.1:${PRIVATE_PG_PORT}\n`);
    return async () => {};
  }
  const initdb = findPostgresBin("initdb");
  const pgCtl = findPostgresBin("pg_ctl");
  if (!initdb || !pgCtl) {
    throw new Error(
      "PostgreSQL is not installed: install it (Debian: `apt-get install -y postgresql`) or set DATABASE_URL to a server of yours.",
    );
  }
  const pgData = path.join(dataDir, "postgres");
  const runAs = process.getuid?.() === 0;
  if (!existsSync(path.join(pgData, "PG_VERSION"))) {
    mkdirSync(pgData, { recursive: true });
    if (runAs) chownSync(pgData, uidOf("postgres"), gidOf("postgres"));
    run(...asServerUser(initdb, ["-D", pgData, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]));
  }
  const options = `-p ${PRIVATE_PG_PORT} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;
  if (!listening) {
    run(...asServerUser(pgCtl, ["-D", pgData, "-o", options, "-l", path.join(pgData, "server.log"), "-w", "start"]));
  }
  await waitForPort(PRIVATE_PG_PORT, "PostgreSQL");
  writeFileSync(owner, String(process.pid));
  process.stdout.write(`PostgreSQL (private, data in ${pgData}) on 127.0.0.1:${PRIVATE_PG_PORT}\n`);
  return async () => {
    run(...asServerUser(pgCtl, ["-D", pgData, "-m", "fast", "-w", "stop"]));
    rmSync(owner, { force: true });
  };
}

async function startRedis(dataDir: string): Promise<() => Promise<void>> {
  const redisServer = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).stdout.trim();
  if (!redisServer) {
    throw new Error(
      "Redis is not installed: install it (Debian: `apt-get install -y redis-server`) or set REDIS_URL to a server of yours.",
    );
  }
  const dir = path.join(dataDir, "redis");
  mkdirSync(dir, { recursive: true });
  if (await isListening(PRIVATE_REDIS_PORT)) {
    process.stdout.write(`Redis (private, started by another command) on 127.0.0.1:${PRIVATE_REDIS_PORT}\n`);
    return async () => {}; // as PostgreSQL above
  }
  const log = openSync(path.join(dir, "server.log"), "a");
  const child: ChildProcess = spawn(
    redisServer,
    [
      "--port",
      String(PRIVATE_REDIS_PORT),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--appendonly",
      "yes",
      "--save",
      "",
      "--maxmemory-policy",
      "noeviction",
    ],
    // detached: like PostgreSQL above, out of reach of the terminal's Ctrl-C, stopped last and explicitly.
    { stdio: ["ignore", log, log], detached: true },
  );
  await waitForPort(PRIVATE_REDIS_PORT, "Redis");
  process.stdout.write(`Redis (private, data in ${dir}) on 127.0.0.1:${PRIVATE_REDIS_PORT}\n`);
  return () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed:\n${result.stderr || result.stdout}`);
  }
}

function uidOf(user: string): number {
  return Number(spawnSync("id", ["-u", user], { encoding: "utf8" }).stdout.trim());
}
function gidOf(user: string): number {
  return Number(spawnSync("id", ["-g", user], { encoding: "utf8" }).stdout.trim());
}
