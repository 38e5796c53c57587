/**
 * The floor of any HTTP front to the queue: bare express 5 routes (express.json, nothing else) in a process of their
 * own, like the gateway, against the baseline's no-op worker. Not targets.
 * - `/noop` adds a no-op job per request and answers when it finishes: the bare round trip's own work behind one HTTP
 *   hop, which is how much of the distance between evaluate and the bare round trip any HTTP service must travel.
 * - `/batched` puts the requests read in the same turn of the event loop into one no-op job, as the gateway does with
 *   evaluations (EvaluationBatcher), and answers them all when it finishes: how far batching alone can take an HTTP
 *   front, before any authentication, database read or evaluation. Against a worker that answers a job with one
 *   value per request (bench/cost/evaluating-worker.ts), each request gets its own.
 * With FLOOR_PROTECTIONS set, the protections every gateway request pays as their libraries give them come first
 * (../support/floor-protections.ts), accepting FLOOR_BEARER. Exits on SIGTERM.
 */
import "../support/floor-telemetry";
import { randomUUID } from "node:crypto";
import { Queue, QueueEvents } from "bullmq";
import express from "express";
import { createRedis, jobOptions } from "@mdp/queues";
import { protect } from "../support/floor-protections";

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const prefix = process.env.QUEUE_PREFIX ?? "bench";
  const name = process.env.QUEUE_NAME ?? "noop";
  const queue = new Queue(name, { connection: createRedis(redisUrl, "worker"), prefix });
  const events = new QueueEvents(name, { connection: createRedis(redisUrl, "worker"), prefix });
  queue.setMaxListeners(0);
  await events.waitUntilReady();
  const app = express();
  if (process.env.FLOOR_PROTECTIONS) {
    const bearer = process.env.FLOOR_BEARER;
    if (!bearer) throw new Error("FLOOR_PROTECTIONS needs FLOOR_BEARER, the one token the floor accepts");
    protect(app, new Map([[bearer, { urn: "urn:li:corpuser:floor", expiresAt: Date.now() + 86_400_000 }]]));
  }
  app.use(express.json({ limit: "1mb" }));
  app.post("/noop", (_req, res, next) => {
    queue
      .add("noop", {}, jobOptions("evaluate", randomUUID()))
      .then((job) => job.waitUntilFinished(events, 30_000))
      .then((value) => res.json(value))
      .catch(next);
  });
  let batch: Array<{ resolve: (value: unknown) => void; reject: (error: unknown) => void }> = [];
  app.post("/batched", (_req, res, next) => {
    if (batch.length === 0) setImmediate(flush);
    batch.push({ resolve: (value) => res.json(value), reject: next });
  });
  function flush(): void {
    const waiting = batch;
    batch = [];
    queue
      .add("noop", { requests: waiting.length }, jobOptions("evaluate", randomUUID()))
      .then((job) => job.waitUntilFinished(events, 30_000))
      .then((value) =>
        waiting.forEach((w, i) =>
          w.resolve(Array.isArray(value) && value.length === waiting.length ? value[i] : value),
        ),
      )
      .catch((error: unknown) => waiting.forEach((w) => w.reject(error)));
  }
  const port = Number(process.env.PORT);
  app.listen(port, "127.0.0.1", () => process.stdout.write(`http floor server listening on ${port}\n`));
  process.on("SIGTERM", () => process.exit(0));
}

void main();
