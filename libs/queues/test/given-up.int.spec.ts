/**
 * A job BullMQ fails without running it (one that stalled more often than its queue allows: BullMQ marks it, and the
 * next worker to fetch it fails it at once) reaches onGivenUp, since its handler never sees that last attempt (real
 * Redis, BullMQ's own path: the mark is what its stalled-job check writes).
 */
import { randomUUID } from "node:crypto";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, createWorker, Producer } from "../src";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

it("tells onGivenUp of a job BullMQ fails without running its handler", async () => {
  const prefix = `{test-given-up-${randomUUID()}}`;
  const connection = createRedis(REDIS_URL, "worker");
  const workerConnection = createRedis(REDIS_URL, "worker");
  const producer = new Producer("truncate", connection, prefix);
  const payload = { taskId: "t1", entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 1 };
  await producer.enqueue("t1", payload);
  // What BullMQ's stalled-job check writes on a job that stalled once too often.
  await connection.hset(producer.queue.toKey("t1"), "defa", "job stalled more than allowable limit");

  const handled: string[] = [];
  const givenUp: Array<{ taskId: string; reason: string }> = [];
  const worker = createWorker(
    "truncate",
    async (p) => {
      handled.push(p.taskId);
      return null;
    },
    {
      connection: workerConnection,
      prefix,
      concurrency: 1,
      logger: createLogger("test", "silent"),
      onGivenUp: async (p, _job, reason) => {
        givenUp.push({ taskId: p.taskId, reason });
      },
    },
  );
  void worker.run();
  await eventually("the worker has given the stalled job up", () => givenUp.length > 0);

  expect(givenUp).toEqual([{ taskId: "t1", reason: "job stalled more than allowable limit" }]);
  expect(handled).toEqual([]);
  expect(await (await producer.queue.getJob("t1"))?.isFailed()).toBe(true);
  await worker.close();
  await producer.queue.obliterate({ force: true });
  await producer.close();
  await closeRedis(connection);
  await closeRedis(workerConnection);
});
