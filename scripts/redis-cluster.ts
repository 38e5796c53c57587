/**
 * A private 3-master Redis Cluster on loopback for the cluster test mode (`pnpm test:cluster`, and the last stage of
 * `pnpm test`): Debian's redis-server (installed with apt-get when missing and we may), three nodes with
 * `cluster-enabled yes` on free ports, joined by `redis-cli --cluster create`, data under .data/redis-cluster/, and
 * stopped and removed afterwards. Never touches another Redis.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { isListening } from "./local-services";

export interface RedisCluster {
  /** REDIS_URL naming the cluster (redis-cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3) */
  url: string;
  ports: number[];
  /** SIGKILL the node on `port`, as a crash would (a fault test's failover) */
  kill(port: number): void;
  stop(): Promise<void>;
}

const MASTERS = 3;

export interface ClusterOptions {
  /** replicas per master (0: none, the test stage's cluster); with them, a master that fails is replaced */
  replicas?: number;
  /** cluster-node-timeout: how long a node may be unreachable before it counts as failed (ms) */
  nodeTimeoutMs?: number;
  /** where the nodes keep their data (under dataDir); one per cluster running at once */
  name?: string;
}

/** Attempts at starting the nodes: a free port found can be taken by another process before its node binds it. */
const START_ATTEMPTS = 3;

export async function startRedisCluster(dataDir: string, options: ClusterOptions = {}): Promise<RedisCluster> {
  ensureRedisInstalled();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(dataDir, options);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= START_ATTEMPTS) throw error;
      process.stdout.write(`${error.message}; starting the Redis Cluster again on other ports\n`);
    }
  }
}

class PortTakenError extends Error {}

async function startOnce(
  dataDir: string,
  { replicas = 0, nodeTimeoutMs = 5_000, name = "redis-cluster" }: ClusterOptions,
): Promise<RedisCluster> {
  const root = path.join(dataDir, name);
  const ports = await freeClusterPorts(MASTERS * (1 + replicas));
  const nodes: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(nodes.map(stopNode));
    for (const port of ports) rmSync(path.join(root, String(port)), { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const dir = path.join(root, String(port));
      rmSync(dir, { recursive: true, force: true }); // a fresh node: no nodes.conf of a previous cluster
      mkdirSync(dir, { recursive: true });
      const log = openSync(path.join(dir, "server.log"), "a");
      const args = [
        ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
        ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
        ...["--cluster-node-timeout", String(nodeTimeoutMs)],
        ...["--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"],
      ];
      // detached: out of reach of the terminal's Ctrl-C, stopped explicitly (as local-services.ts does).
      nodes.push(spawn("redis-server", args, { stdio: ["ignore", log, log], detached: true }));
    }
    await Promise.all(
      ports.map((port, i) =>
        waitFor(`Redis node on 127.0.0.1:${port}`, () => {
          // a node that exited before listening could not bind its port or its bus port (port + 10000)
          if (nodes[i]!.exitCode !== null)
            throw new PortTakenError(
              `the Redis node for port ${port} exited at start (${lastLine(path.join(root, String(port), "server.log"))})`,
            );
          return isListening(port);
        }),
      ),
    );
    run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      String(replicas),
      "--cluster-yes",
    ]);
    // Every node must agree that all slots are served before a client may rely on it.
    await waitFor("the Redis Cluster to report cluster_state:ok on every node", async () =>
      ports.every((port) => run("redis-cli", ["-p", String(port), "cluster", "info"]).includes("cluster_state:ok")),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const url = `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(",")}`;
  process.stdout.write(`Redis Cluster (private, 3 masters, ${replicas} replicas each, data in ${root}) at ${url}\n`);
  const kill = (port: number) => nodes[ports.indexOf(port)]?.kill("SIGKILL");
  return { url, ports, kill, stop };
}

/** redis-server and redis-cli from Debian's redis-server package; installed here when missing and we are root. */
function ensureRedisInstalled(): void {
  const has = (bin: string) => spawnSync("sh", ["-c", `command -v ${bin}`]).status === 0;
  if (has("redis-server") && has("redis-cli")) return;
  if (process.getuid?.() === 0) {
    process.stdout.write("installing redis-server (apt-get) for the Redis Cluster test mode\n");
    const install = () =>
      spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "redis-server"], { stdio: "inherit" });
    if (install().status !== 0) {
      spawnSync("apt-get", ["update"], { stdio: "inherit" });
      install();
    }
  }
  if (!has("redis-server") || !has("redis-cli")) {
    throw new Error("The Redis Cluster test mode needs redis-server and redis-cli: `apt-get install -y redis-server`.");
  }
}

/** Ports free now whose cluster bus port (port + 10000) is free too. */
async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await anyFreePort();
    // a node also binds its cluster bus on port + 10000, which must be free and no other node's port or bus
    const clash = (p: number) => ports.some((q) => q === p || q + 10_000 === p || q === p + 10_000);
    // (bound, not only not listened on: an outgoing connection's local port in the ephemeral range refuses the bind)
    if (port + 10_000 > 65_535 || clash(port) || !(await canBind(port + 10_000))) continue;
    ports.push(port);
  }
  return ports;
}

async function anyFreePort(): Promise<number> {
  // The kernel's ephemeral range may reach 65535: pick within 20000-45000, where port + 10000 still fits.
  const port = 20_000 + Math.floor(Math.random() * 25_000);
  return (await canBind(port)) ? port : anyFreePort();
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The last line a node wrote to its log: why it stopped. */
function lastLine(file: string): string {
  return readFileSync(file, "utf8").trim().split("\n").at(-1)?.slice(0, 300) ?? "";
}

function stopNode(node: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (node.exitCode !== null || node.signalCode !== null) return resolve();
    node.once("exit", () => resolve());
    node.kill("SIGTERM");
  });
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${result.stderr || result.stdout}`);
  return result.stdout;
}
