/**
 * A Redis server of the test's own on a free port, for fault tests (stalls, outages) that must never touch the shared
 * one. No persistence; stopped (and its process gone) by stop().
 */
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { freePort, waitFor } from "./services";

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGTERM, and wait until the process has exited */
  stop(): Promise<void>;
  /** starts it again on the same port (after stop) */
  restart(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
    await waitFor(`redis-server on port ${port}`, () => isListening(port), 10_000);
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, stop, restart: start };
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
