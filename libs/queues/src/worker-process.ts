import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";
import { closeWorker } from "./worker";
import { serveMonitor, type Monitor, type MonitorOptions } from "./worker-monitor";

export interface WorkerProcess {
  worker: Worker;
  logger: Logger;
  /** closed after the worker, in order (Redis connections, Prisma, telemetry) */
  resources: Array<() => Promise<unknown>>;
  /** aborted on SIGTERM/SIGINT: long jobs stop between steps and hand themselves back to the queue */
  shutdown?: AbortController;
  /** the monitoring port (/health, /ready, /metrics): see worker-monitor.ts */
  monitor: Omit<MonitorOptions, "worker" | "logger">;
}

/**
 * Opens the worker's monitoring port, then runs the worker until SIGTERM/SIGINT, then stops taking jobs, lets the
 * running ones finish or hand back, and closes everything it was given. `worker.close()` does not close an ioredis
 * instance passed in, hence `resources`. A monitoring port that cannot be opened (in use) stops the process: a worker
 * nobody can watch is not started.
 */
export function runUntilSignalled(proc: WorkerProcess): void {
  let stopping = false;
  let monitor: Monitor | undefined;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    proc.logger.info({ signal }, "shutting down: finishing or handing back running jobs");
    proc.shutdown?.abort();
    const force = setTimeout(() => {
      proc.logger.error("shutdown took longer than 25 s, exiting; running jobs will be retried after the stall check");
      process.exit(1);
    }, 25_000).unref();
    // /ready answers 503 ("worker": "stopped") while the worker drains; the port closes last.
    await closeWorker(proc.worker);
    await monitor?.close().catch(() => undefined);
    for (const close of proc.resources) await close().catch(() => undefined);
    clearTimeout(force);
    proc.logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  serveMonitor({ ...proc.monitor, worker: proc.worker, logger: proc.logger }).then(
    (opened) => {
      monitor = opened;
      if (stopping) return;
      void proc.worker.run();
      proc.logger.info({ queue: proc.worker.name, concurrency: proc.worker.opts.concurrency }, "worker running");
    },
    (error: unknown) => {
      proc.logger.fatal(
        { err: error, port: proc.monitor.port, host: proc.monitor.host },
        "could not open the monitoring port (set TRUNCATION_WORKER_PORT / EVALUATION_WORKER_PORT, 0 for any free one)",
      );
      process.exit(1);
    },
  );
}
