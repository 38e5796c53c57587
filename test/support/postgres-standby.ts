/**
 * A private PostgreSQL primary and a streaming hot standby of it (`pg_basebackup -R`), on free ports under `.data/`:
 * for the read-replica tests, which stop, start and delay the standby. As root, the servers run as `postgres` (which
 * PostgreSQL requires), as scripts/local-services.ts does.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { applyMigrations, ensureDatabase } from "@mdp/db";
import { canConnect } from "@mdp/db/server-check";
import { freePort, uniqueName, waitFor } from "./services";

const ROOT = path.resolve(__dirname, "..", "..");
const asRoot = process.getuid?.() === 0;

const asServerUser = (command: string, args: string[]): [string, string[]] =>
  asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];

function run(command: string, args: string[]): void {
  const result = spawnSync(...asServerUser(command, args), { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${result.stderr || result.stdout}`);
}

/** One query on its own connection (the tests' view of a server: its statistics, its settings). */
export async function queryOnce<T extends Record<string, unknown>>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

export interface PrimaryAndStandby {
  /** the migrated `metadata_admin` database on the primary */
  primaryUrl: string;
  /** the same database on the standby */
  standbyUrl: string;
  stopStandby(): Promise<void>;
  startStandby(): Promise<void>;
  /** the standby's recovery_min_apply_delay (0: replay as soon as received), reloaded */
  delayStandby(ms: number): Promise<void>;
  /** stops both and removes their data */
  destroy(): Promise<void>;
}

export async function primaryAndStandby(): Promise<PrimaryAndStandby> {
  const dir = path.join(ROOT, ".data", uniqueName("read-replicas"));
  mkdirSync(dir, { recursive: true });
  if (asRoot) spawnSync("chown", ["-R", "postgres:postgres", dir]);
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const primaryData = path.join(dir, "primary");
  const standbyData = path.join(dir, "standby");
  const options = (port: number) =>
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c max_connections=60`;
  const primaryServer = `postgresql://postgres@127.0.0.1:${primaryPort}`;
  const standbyServer = `postgresql://postgres@127.0.0.1:${standbyPort}`;
  const startStandby = async () => {
    run("pg_ctl", ["-D", standbyData, "-o", options(standbyPort), "-l", `${standbyData}.log`, "-w", "start"]);
    await waitFor("the standby", () => canConnect(`${standbyServer}/postgres`, 1000));
  };
  const destroy = async () => {
    for (const data of [standbyData, primaryData]) {
      spawnSync(...asServerUser("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])); // not running: no matter
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run("initdb", ["-D", primaryData, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
    run("pg_ctl", ["-D", primaryData, "-o", options(primaryPort), "-l", `${primaryData}.log`, "-w", "start"]);
    const primaryUrl = `${primaryServer}/metadata_admin`;
    await ensureDatabase(primaryUrl);
    await applyMigrations(primaryUrl);
    // -R: standby.signal and primary_conninfo written for it; -X stream: it starts from a consistent copy.
    run("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(primaryPort),
      "-U",
      "postgres",
      "-D",
      standbyData,
      "-R",
      "-X",
      "stream",
      "-c",
      "fast",
    ]);
    await startStandby();
    return {
      primaryUrl,
      standbyUrl: `${standbyServer}/metadata_admin`,
      stopStandby: async () => run("pg_ctl", ["-D", standbyData, "-m", "fast", "-w", "stop"]),
      startStandby,
      delayStandby: async (ms) => {
        await queryOnce(
          `${standbyServer}/postgres`,
          `ALTER SYSTEM SET recovery_min_apply_delay = '${Math.round(ms)}ms'`,
        );
        await queryOnce(`${standbyServer}/postgres`, "SELECT pg_reload_conf()");
      },
      destroy,
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}
