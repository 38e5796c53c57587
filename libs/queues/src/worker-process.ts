import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";
import { closeWorker } from "./worker";
import { serveMonitor, type Monitor, type MonitorOptions } from "./worker-monitor";

export interface WorkerProcess {
  /**
   * the process's worker, or its workers (one per shard of a sharded queue: createShardWorkers): /ready reports them,
   * and they run once the monitoring port is open unless `running`
   */
  worker: Worker | Worker[];
  /** the worker runs already (a process whose only BullMQ worker is its chores', which startChores runs) */
  running?: boolean;
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
  const workers = [proc.worker].flat();
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
    await Promise.all(workers.map((worker) => closeWorker(worker)));
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
      if (!proc.running) for (const worker of workers) void worker.run();
      const concurrency = workers.reduce((sum, worker) => sum + (worker.opts.concurrency ?? 1), 0);
      proc.logger.info({ queue: workers[0]!.name, shards: workers.length, concurrency }, "worker running");
    },
    (error: unknown) => {
      proc.logger.fatal(
        { err: error, port: proc.monitor.port, host: proc.monitor.host },
        "could not open the monitoring port (set its *_WORKER_PORT, 0 for any free one)",
      );
      process.exit(1);
    },
  );
}
