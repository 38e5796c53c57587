import { rmSync, writeFileSync } from "node:fs";
import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";

export interface WorkerProcess {
  worker: Worker;
  logger: Logger;
  /** closed after the worker, in order (Redis connections, Prisma, telemetry) */
  resources: Array<() => Promise<unknown>>;
  /** aborted on SIGTERM/SIGINT: long jobs stop between steps and hand themselves back to the queue */
  shutdown?: AbortController;
  /** WORKER_HEARTBEAT_FILE: touched every HEARTBEAT_INTERVAL_MS while the worker runs and Redis answers */
  heartbeatFile?: string;
}

export const HEARTBEAT_INTERVAL_MS = 10_000;

/**
 * A worker has no HTTP port, so its container health check reads the age of a file: rewritten every 10 s while the
 * BullMQ worker is running and a PING on its own Redis connection answers within 2 s, removed at shutdown. One PING per
 * interval is the whole cost; the check itself (`find -newermt`) starts no node process.
 */
function startHeartbeat(proc: WorkerProcess, file: string): () => void {
  const beat = async () => {
    if (!proc.worker.isRunning()) return;
    // The ioredis instance the worker was created with (createWorker), which BullMQ uses for its commands.
    const client = proc.worker.opts.connection as { ping?: () => Promise<string> };
    if (typeof client.ping !== "function") return;
    const pong = await Promise.race([
      client.ping(),
      new Promise<string>((resolve) => setTimeout(resolve, 2_000, "timeout").unref()),
    ]);
    if (pong === "PONG") writeFileSync(file, `${new Date().toISOString()}\n`);
  };
  const timer = setInterval(() => {
    beat().catch((error: unknown) => proc.logger.debug({ err: error }, "heartbeat skipped"));
  }, HEARTBEAT_INTERVAL_MS);
  timer.unref();
  // The first beat soon after start: a health check need not wait a whole interval.
  setTimeout(() => void beat().catch(() => undefined), 500).unref();
  return () => {
    clearInterval(timer);
    rmSync(file, { force: true });
  };
}

/**
 * Runs a worker until SIGTERM/SIGINT, then stops taking jobs, lets the running ones finish or hand back, and closes
 * everything it was given. `worker.close()` does not close an ioredis instance passed in, hence `resources`.
 */
export function runUntilSignalled(proc: WorkerProcess): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    proc.logger.info({ signal }, "shutting down: finishing or handing back running jobs");
    proc.shutdown?.abort();
    stopHeartbeat();
    const force = setTimeout(() => {
      proc.logger.error("shutdown took longer than 25 s, exiting; running jobs will be retried after the stall check");
      process.exit(1);
    }, 25_000).unref();
    await proc.worker.close();
    for (const close of proc.resources) await close().catch(() => undefined);
    clearTimeout(force);
    proc.logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  const stopHeartbeat = proc.heartbeatFile ? startHeartbeat(proc, proc.heartbeatFile) : () => undefined;
  void proc.worker.run();
  proc.logger.info({ queue: proc.worker.name, concurrency: proc.worker.opts.concurrency }, "worker running");
}
