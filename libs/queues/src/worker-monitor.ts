import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue, type Worker } from "bullmq";
import { withTimeout, type Logger } from "@mdp/core";
import type { RedisConnection } from "./connection";
import { QUEUE_NAMES, type QueueKey } from "./names";
import { ignoreQueueError } from "./producer";
import { JOB_OUTCOMES, type JobObserver, type JobOutcome } from "./worker";

/**
 * The part of prom-client this module uses. prom-client is a dependency of each service, not of this library: the
 * service passes the module in (`import * as prom from "prom-client"`), so every worker shares this one implementation
 * of its metrics and monitoring port.
 */
export interface PromClient<R extends PromRegistry = PromRegistry> {
  Registry: new () => R;
  Counter: new (config: MetricConfig<R>) => { inc(labels: Labels, value?: number): void };
  Histogram: new (config: MetricConfig<R> & { buckets: number[] }) => { observe(labels: Labels, value: number): void };
  Gauge: new (config: MetricConfig<R> & { collect?: () => Promise<void> }) => {
    set(labels: Labels, value: number): void;
    reset(): void;
  };
  collectDefaultMetrics(config: { register: R }): void;
}
export interface PromRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
}
type Labels = Record<string, string>;
interface MetricConfig<R> {
  name: string;
  help: string;
  labelNames?: readonly string[];
  registers: R[];
}

/** The states whose job counts `mdp_queue_jobs` reports: one Redis command each (LLEN/ZCARD), whatever the depth. */
export const QUEUE_STATES = ["waiting", "active", "delayed", "failed", "completed"] as const;
/** A scrape does not wait longer than this for Redis; the depth is left out of that scrape instead. */
const SCRAPE_TIMEOUT_MS = 2_000;

/**
 * A worker's Prometheus metrics: node's own (CPU, memory, event loop lag, GC), its queue's depth by state (counted when
 * scraped), and how its jobs end (createWorker's observer). Every label takes a value from a fixed set: the queue, the
 * state, the outcome.
 */
export class WorkerMetrics<R extends PromRegistry = PromRegistry> implements JobObserver {
  readonly registry: R;
  private readonly durations: { observe(labels: Labels, value: number): void };
  private readonly outcomes: { inc(labels: Labels, value?: number): void };
  /** the worker's queue, one per shard */
  private queues: Queue[] = [];

  constructor(
    prom: PromClient<R>,
    private readonly logger?: Logger,
  ) {
    this.registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.durations = new prom.Histogram({
      name: "mdp_job_duration_seconds",
      help: "How long a job's handler ran, by queue (every outcome)",
      labelNames: ["queue"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    });
    this.outcomes = new prom.Counter({
      name: "mdp_jobs_total",
      help: "Jobs run to an end, by queue and outcome (completed, cancelled, retried, failed, delayed)",
      labelNames: ["queue", "outcome"],
      registers,
    });
    const countDepth = () => this.depth();
    const depth = new prom.Gauge({
      name: "mdp_queue_jobs",
      help: "Jobs in the worker's queue by state, counted when scraped",
      labelNames: ["queue", "state"],
      registers,
      async collect() {
        depth.reset();
        const counts = await countDepth();
        if (!counts) return;
        for (const state of QUEUE_STATES) depth.set({ queue: counts.queue, state }, counts.counts[state] ?? 0);
      },
    });
  }

  jobEnded(queue: QueueKey, outcome: JobOutcome, seconds?: number): void {
    this.outcomes.inc({ queue: QUEUE_NAMES[queue], outcome });
    if (seconds !== undefined) this.durations.observe({ queue: QUEUE_NAMES[queue] }, seconds);
  }

  /**
   * Counts the jobs of the workers' queue on every scrape, on the workers' own Redis connection: the sum over its
   * shards when there are several workers (createShardWorkers), all of one queue.
   */
  watch(workers: Worker | Worker[]): void {
    this.queues = [workers].flat().map((worker) => {
      const queue = new Queue(worker.name, { connection: worker.opts.connection, prefix: worker.opts.prefix });
      queue.on("error", ignoreQueueError); // a scrape that fails says so itself
      return queue;
    });
    // Every outcome from the first scrape on, at zero until it happens: a rate over a series that appears late is wrong.
    for (const outcome of JOB_OUTCOMES) this.outcomes.inc({ queue: this.queues[0]!.name, outcome }, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close()));
  }

  private async depth(): Promise<{ queue: string; counts: Record<string, number> } | undefined> {
    if (this.queues.length === 0) return undefined;
    try {
      const shards = await withTimeout(
        Promise.all(this.queues.map((queue) => queue.getJobCounts(...QUEUE_STATES))),
        SCRAPE_TIMEOUT_MS,
      );
      const counts: Record<string, number> = {};
      for (const shard of shards)
        for (const [state, n] of Object.entries(shard)) counts[state] = (counts[state] ?? 0) + n;
      return { queue: this.queues[0]!.name, counts };
    } catch (error) {
      this.logger?.debug({ err: error }, "queue depth not counted for this scrape");
      return undefined;
    }
  }
}

export interface MonitorOptions {
  port: number;
  host: string;
  worker: Worker | Worker[];
  metrics: WorkerMetrics;
  /** more registries served at /metrics (a worker's own metrics, such as the evaluation counts) */
  registries?: PromRegistry[];
  /** readiness checks besides Redis and the worker: resolve when the dependency answers (PostgreSQL's SELECT 1) */
  checks: Record<string, () => Promise<unknown>>;
  /** more of /ready's answer, informative only (the read replicas' states): never a reason to answer 503 */
  details?: () => Record<string, unknown>;
  logger: Logger;
}

export interface Monitor {
  /** the port it listens on (the one asked for, or the one picked for 0) */
  port: number;
  close(): Promise<void>;
}

/**
 * A worker's monitoring port: `GET /health` (the process answers), `GET /ready` (PostgreSQL and Redis answer within 2 s
 * and the BullMQ worker runs; 503 otherwise) and `GET /metrics` (Prometheus text). Like the gateway's, these answer
 * without credentials: probes and scrapers hold no token, and what they show is aggregate (counts, durations, the
 * state of each dependency as a fixed word), never a job's data, a host name or an error's text.
 */
export async function serveMonitor(options: MonitorOptions): Promise<Monitor> {
  const { metrics, logger } = options;
  const workers = [options.worker].flat();
  const worker = workers[0]!;
  metrics.watch(workers);
  const registries = [metrics.registry, ...(options.registries ?? [])];
  const checks: Record<string, () => Promise<unknown>> = {
    ...options.checks,
    // The connection the worker was created with (createWorker), which BullMQ uses for its commands.
    redis: () => (worker.opts.connection as RedisConnection).ping(),
  };
  const ready = async () => {
    const entries = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        try {
          await withTimeout(check(), 2_000);
          return [name, "ok"] as const;
        } catch (error) {
          logger.debug({ check: name, err: error }, "readiness check failed");
          return [name, "unreachable"] as const;
        }
      }),
    );
    const report: Record<string, string> = Object.fromEntries(entries);
    report.worker = workers.every((w) => w.isRunning() && !w.closing) ? "ok" : "stopped";
    return { ready: Object.values(report).every((state) => state === "ok"), checks: report, ...options.details?.() };
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET");
      return json(res, 405, { status: 405, code: "METHOD_NOT_ALLOWED", message: "Only GET is served here." });
    }
    const answer = async () => {
      if (path === "/health") return json(res, 200, { status: "ok" });
      if (path === "/ready") {
        const report = await ready();
        return json(res, report.ready ? 200 : 503, report);
      }
      if (path === "/metrics") {
        const texts = await Promise.all(registries.map((r) => r.metrics()));
        res.writeHead(200, { "content-type": metrics.registry.contentType });
        return res.end(texts.join("\n"));
      }
      json(res, 404, { status: 404, code: "NOT_FOUND", message: "Served here: /health, /ready, /metrics." });
    };
    answer().catch((error: unknown) => {
      logger.error({ err: error, path }, "monitoring request failed");
      if (!res.headersSent) json(res, 500, { status: 500, code: "INTERNAL_SERVER_ERROR", message: "Internal error." });
      else res.destroy();
    });
  });
  // Probes and scrapes only: requests are small and quick, a stuck client is not kept.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, host: options.host }, "monitoring listening");
  return {
    port,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await metrics.close();
    },
  };
}
