/**
 * A private PgBouncer in transaction pooling mode in front of a PostgreSQL server, for the tests that run the system
 * through a pooler (test/e2e/pgbouncer.e2e.spec.ts): Debian's pgbouncer (installed with apt-get when missing and we
 * may), on a free loopback port, every database of the server (`* =`), `auth_type trust` for the users it is told
 * of, its configuration under .data/<name>/, stopped and removed afterwards. Never touches another pooler.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { isListening } from "./local-services";

export interface PgBouncer {
  port: number;
  /** `databaseUrl` (a database of the server behind it) as reached through the pooler */
  url(databaseUrl: string): string;
  /** what the pooler printed so far (its log goes to stderr) */
  output(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** the PostgreSQL server behind it */
  server: { host: string; port: number };
  /** the users clients log in as (trust: no password) */
  users: string[];
  /** server connections per database and user (PgBouncer's default_pool_size) */
  poolSize?: number;
  /** where its configuration lives (under dataDir); one per pooler running at once */
  name?: string;
}

export async function startPgBouncer(dataDir: string, options: PgBouncerOptions): Promise<PgBouncer> {
  ensurePgBouncerInstalled();
  const dir = path.join(dataDir, options.name ?? "pgbouncer");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const port = await freePort();
  writeFileSync(path.join(dir, "userlist.txt"), options.users.map((u) => `"${u}" ""\n`).join(""));
  writeFileSync(
    path.join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = host=${options.server.host} port=${options.server.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${options.poolSize ?? 20}`,
      "max_client_conn = 2000",
      // a server connection goes back to the pool at each transaction's end as it is: nothing to reset
      "server_reset_query =",
      `admin_users = ${options.users.join(",")}`,
      `stats_users = ${options.users.join(",")}`,
      "",
    ].join("\n"),
  );
  // PgBouncer refuses to run as root: as root it runs as the postgres system user (as the private PostgreSQL does).
  const root = process.getuid?.() === 0;
  if (root) {
    const { uid, gid } = idsOf("postgres");
    for (const file of ["", "userlist.txt", "pgbouncer.ini"]) chownSync(path.join(dir, file), uid, gid);
  }
  const args = [...(root ? ["-u", "postgres"] : []), path.join(dir, "pgbouncer.ini")];
  const child: ChildProcess = spawn(pgbouncerBinary()!, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT"); // PgBouncer's immediate shutdown
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  while (!(await isListening(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`PgBouncer did not start on 127.0.0.1:${port}: ${output.trim().split("\n").at(-1)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = (databaseUrl: string) => {
    const through = new URL(databaseUrl);
    through.hostname = "127.0.0.1";
    through.port = String(port);
    return through.toString();
  };
  process.stdout.write(`PgBouncer (private, transaction pooling) on 127.0.0.1:${port}\n`);
  return { port, url, output: () => output, stop };
}

/** Debian's pgbouncer, on PATH or in /usr/sbin (off a non-root user's PATH). */
function pgbouncerBinary(): string | undefined {
  if (spawnSync("sh", ["-c", "command -v pgbouncer"]).status === 0) return "pgbouncer";
  return existsSync("/usr/sbin/pgbouncer") ? "/usr/sbin/pgbouncer" : undefined;
}

/** Debian's pgbouncer; installed here when missing and we are root (as .ci/run does). */
export function ensurePgBouncerInstalled(): void {
  const has = () => pgbouncerBinary() !== undefined;
  if (has()) return;
  if (process.getuid?.() === 0) {
    process.stdout.write("installing pgbouncer (apt-get) for the pooler tests\n");
    const install = () =>
      spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "pgbouncer"], { stdio: "inherit" });
    if (install().status !== 0) {
      spawnSync("apt-get", ["update"], { stdio: "inherit" });
      install();
    }
  }
  if (!has()) throw new Error("The pooler tests need PgBouncer: `apt-get install -y pgbouncer`.");
}

function idsOf(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync("id", [flag, user], { encoding: "utf8" }).stdout.trim());
  return { uid: id("-u"), gid: id("-g") };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
