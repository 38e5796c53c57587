/**
 * The floor of any HTTP front to the queue: a bare express 5 route (express.json, nothing else) that adds a no-op job
 * and answers when it finishes, the bare round trip's own work behind one HTTP hop. It runs in its own process, like
 * the gateway, against the baseline's no-op worker. Not a target: it shows how much of the distance between evaluate
 * and the bare round trip any HTTP service must travel. Exits on SIGTERM.
 */
import { randomUUID } from "node:crypto";
import { Queue, QueueEvents } from "bullmq";
import express from "express";
import { createRedis, jobOptions } from "@mdp/queues";

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const prefix = process.env.QUEUE_PREFIX ?? "bench";
  const name = process.env.QUEUE_NAME ?? "noop";
  const queue = new Queue(name, { connection: createRedis(redisUrl, "worker"), prefix });
  const events = new QueueEvents(name, { connection: createRedis(redisUrl, "worker"), prefix });
  queue.setMaxListeners(0);
  await events.waitUntilReady();
  const app = express();
  app.use(express.json({ limit: "1mb" }));
  app.post("/noop", (_req, res, next) => {
    queue
      .add("noop", {}, jobOptions("evaluate", randomUUID()))
      .then((job) => job.waitUntilFinished(events, 30_000))
      .then((value) => res.json(value))
      .catch(next);
  });
  const port = Number(process.env.PORT);
  app.listen(port, "127.0.0.1", () => process.stdout.write(`http floor server listening on ${port}\n`));
  process.on("SIGTERM", () => process.exit(0));
}

void main();
