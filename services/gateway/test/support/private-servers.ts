/**
 * A PostgreSQL and a Redis of a test's own, on free ports, in a temporary directory: for fault tests that stop and
 * start a server, which must never touch the servers every other test shares. Each start waits for the server to
 * answer; each stop waits for it to be gone.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { applyMigrations, ensureDatabase } from "@mdp/db";
import { freePort, waitFor } from "../../../../test/support/services";

export interface PrivateServer {
  url: string;
  start(): Promise<void>;
  /**
   * PostgreSQL: "fast" (default) ends connections with admin_shutdown (57P01), as in an orderly restart; "immediate"
   * stops the server as a crash would (no shutdown checkpoint, recovery at the next start). Redis takes no mode.
   */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** stops it and removes its data */
  destroy(): Promise<void>;
}

const asRoot = process.getuid?.() === 0;
/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user. */
const asServerUser = (command: string, args: string[]): [string, string[]] =>
  asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];

function run(command: string, args: string[]): void {
  const [cmd, argv] = asServerUser(command, args);
  const result = spawnSync(cmd, argv, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${result.stderr || result.stdout}`);
}

/** A migrated `metadata_admin` database on a PostgreSQL server of its own. */
export async function privatePostgres(): Promise<PrivateServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mdp-pg-"));
  const data = path.join(dir, "data");
  if (asRoot) spawnSync("chown", ["-R", "postgres:postgres", dir]);
  run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off`;
  const canConnect = async () => {
    const client = new Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const server: PrivateServer = {
    url: `postgresql://postgres@127.0.0.1:${port}/metadata_admin`,
    start: async () => {
      if (await canConnect().catch(() => false)) return; // running
      run("pg_ctl", ["-D", data, "-o", options, "-l", path.join(dir, "server.log"), "-w", "start"]);
      await waitFor("the private PostgreSQL", canConnect);
    },
    stop: async (mode = "fast") => run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]),
    destroy: async () => {
      spawnSync(...asServerUser("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  await ensureDatabase(server.url);
  await applyMigrations(server.url);
  return server;
}

/** A Redis server of its own (no persistence). */
export async function privateRedis(): Promise<PrivateServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mdp-redis-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const pong = async () =>
    spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG";
  const server: PrivateServer = {
    url: `redis://127.0.0.1:${port}`,
    start: async () => {
      if (child && child.exitCode === null && child.signalCode === null) return; // running
      child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""], {
        stdio: "ignore",
      });
      await waitFor("the private Redis", pong);
    },
    stop: async () => {
      const running = child;
      if (!running || running.exitCode !== null) return;
      await new Promise((resolve) => {
        running.once("exit", resolve);
        running.kill("SIGTERM");
      });
    },
    destroy: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
