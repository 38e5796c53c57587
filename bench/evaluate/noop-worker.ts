/**
 * The baseline's worker: a bare BullMQ worker whose processor does nothing, in a process of its own like the
 * evaluation worker, with the same concurrency. Exits on SIGTERM.
 */
import { Worker } from "bullmq";
import { closeRedis, createRedis } from "@mdp/queues";

const connection = createRedis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", "worker");
const worker = new Worker(process.env.QUEUE_NAME ?? "noop", async () => ({}), {
  connection,
  prefix: process.env.QUEUE_PREFIX ?? "bench",
  concurrency: Number(process.env.CONCURRENCY ?? 8),
});
void worker.waitUntilReady().then(() => process.stdout.write("noop worker running\n"));
process.on("SIGTERM", () => {
  void worker
    .close()
    .then(() => closeRedis(connection))
    .then(() => process.exit(0));
});
