import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";

export interface WorkerProcess {
  worker: Worker;
  logger: Logger;
  /** closed after the worker, in order (Redis connections, Prisma, telemetry) */
  resources: Array<() => Promise<unknown>>;
  /** aborted on SIGTERM/SIGINT: long jobs stop between steps and hand themselves back to the queue */
  shutdown?: AbortController;
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
  void proc.worker.run();
  proc.logger.info({ queue: proc.worker.name, concurrency: proc.worker.opts.concurrency }, "worker running");
}
