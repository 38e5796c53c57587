/**
 * Service-level test support: starts the real gateway and worker processes (tsx, as `pnpm start` does) against a
 * test database and a queue prefix of the test's own, and stops them again.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { DEVELOPMENT_SECRETS } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { createTestDatabase } from "@mdp/db/testing";
import { builtServiceNodeArgs, serviceNodeArgs, type ServiceName } from "../../scripts/service-command";

const ROOT = path.resolve(__dirname, "..", "..");
export type { ServiceName };

export interface RunningService {
  name: ServiceName;
  process: ChildProcess;
  /** everything the process printed so far */
  output(): string;
  /** SIGTERM and wait for the exit code */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `built`: run the service from its build (`pnpm build`'s dist/, as in production) instead of its sources. */
export function startService(
  name: ServiceName,
  env: Record<string, string>,
  { built = false }: { built?: boolean } = {},
): RunningService {
  // SERVICE_NODE_ARGS adds node flags, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the services.
  const extraFlags = process.env.SERVICE_NODE_ARGS?.split(" ").filter(Boolean);
  const child = spawn(
    process.execPath,
    built ? builtServiceNodeArgs(ROOT, name, extraFlags) : serviceNodeArgs(ROOT, name, extraFlags),
    {
      cwd: ROOT,
      // Not NODE_ENV=test: libraries such as Apollo behave differently under it, and these tests run the real thing.
      // Workers' monitoring ports: any free one (monitorUrl reads which), so that tests running at once never collide.
      env: {
        ...process.env,
        NODE_ENV: "development",
        LOG_LEVEL: "info",
        TRUNCATION_WORKER_PORT: "0",
        EVALUATION_WORKER_PORT: "0",
        WEBHOOK_WORKER_PORT: "0",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  // SERVICE_OUTPUT_DIR: each service's output also goes to <dir>/<name>-<pid>.log (e.g. with --trace-gc in SERVICE_NODE_ARGS).
  const outputDir = process.env.SERVICE_OUTPUT_DIR;
  if (outputDir) {
    const file = fs.createWriteStream(path.join(outputDir, `${name}-${child.pid}.log`));
    child.stdout.pipe(file);
    child.stderr.pipe(file);
  }
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    name,
    process: child,
    output: () => output,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/** Polls until `check` returns true (a check that throws is asked again) or the timeout passes. */
// A service started under tsx compiles its sources first: 5–10 s on a quiet machine, 20–30 s with both cores busy
// (measured); the bound is what a start may take before it counts as failed, and each wait ends as soon as it holds.
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  await eventually(what, check, { timeoutMs });
}

export async function waitUntilReady(baseUrl: string, service?: RunningService): Promise<void> {
  await waitFor(`${baseUrl}/ready`, async () => (await fetch(`${baseUrl}/ready`)).status === 200, 60_000).catch(
    (error: Error) => {
      throw new Error(`${error.message}\n${service?.output() ?? ""}`);
    },
  );
}

export const uniqueName = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}`;

/** A QUEUE_PREFIX of a test's own, hash-tagged: on a Redis Cluster (pnpm test:cluster) a queue's keys share a slot. */
export const queuePrefix = (label: string) => `{${uniqueName(label)}}`;

export async function waitForOutput(service: RunningService, text: string): Promise<void> {
  await waitFor(`${service.name} to print '${text}'`, async () => service.output().includes(text)).catch(
    (error: Error) => {
      throw new Error(`${error.message}\n${service.output()}`);
    },
  );
}

/** The base URL of a worker's monitoring port (/health, /ready, /metrics), from its "monitoring listening" log line. */
export function monitorUrl(service: RunningService): Promise<string> {
  return listeningUrl(service, "monitoring listening", `${service.name}'s monitoring port`);
}

/**
 * The base URL of a gateway started with PORT=0, from its "gateway listening" log line: the port it bound, which no
 * other process started meanwhile can hold (a port freePort found free may be taken before the gateway binds it).
 */
export function gatewayUrl(service: RunningService, timeoutMs?: number): Promise<string> {
  return listeningUrl(service, "gateway listening", "the gateway's port", timeoutMs);
}

async function listeningUrl(service: RunningService, message: string, what: string, timeoutMs?: number) {
  let port: number | undefined;
  await waitFor(
    what,
    async () => {
      for (const line of service.output().split("\n")) {
        if (!line.includes(`"${message}"`)) continue;
        port = (JSON.parse(line) as { port: number }).port;
        return true;
      }
      return false;
    },
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${service.output()}`);
  });
  return `http://127.0.0.1:${port}`;
}

/** Headers of the trusted system client acting for `actorUrn` (development secrets unless given), with a JSON content type. */
export function systemClient(
  actorUrn = "urn:li:corpuser:admin",
  {
    SYSTEM_CLIENT_ID,
    SYSTEM_CLIENT_SECRET,
  }: { SYSTEM_CLIENT_ID: string; SYSTEM_CLIENT_SECRET: string } = DEVELOPMENT_SECRETS,
): Record<string, string> {
  return {
    "content-type": "application/json",
    authorization: `Basic ${Buffer.from(`${SYSTEM_CLIENT_ID}:${SYSTEM_CLIENT_SECRET}`).toString("base64")}`,
    "x-platform-actor": actorUrn,
  };
}

/** The whole system as the README's first command starts it, on a database of its own. */
export interface StartedSystem {
  /** `127.0.0.1:<port>` of its gateway */
  host: string;
  databaseUrl: string;
  /** the gateway, the truncation worker and the evaluation worker */
  services: RunningService[];
  stop(): Promise<void>;
}

/**
 * A database of its own (`name`), the gateway (development secrets) and both workers, resolved once all three are
 * ready: what a reader of the README and docs/ runs their examples against.
 */
export async function startSystem(name: string): Promise<StartedSystem> {
  const db = await createTestDatabase(name);
  const port = await freePort();
  const env = {
    ...DEVELOPMENT_SECRETS,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: queuePrefix(name),
    PORT: String(port),
  };
  const gateway = startService("gateway", env);
  const services = [
    gateway,
    startService("truncation-worker", env),
    startService("evaluation-worker", env),
    startService("webhook-worker", env),
  ];
  const stop = async () => {
    await Promise.all(services.map((s) => s.stop()));
    await db.drop();
  };
  try {
    await Promise.all([
      waitUntilReady(`http://127.0.0.1:${port}`, gateway),
      waitForOutput(services[1]!, "worker running"),
      waitForOutput(services[2]!, "worker running"),
      waitForOutput(services[3]!, "worker running"),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { host: `127.0.0.1:${port}`, databaseUrl: db.url, services, stop };
}
