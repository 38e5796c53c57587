/**
 * The rows an evaluate job writes (evaluate.processor.ts "Task rows"), in one worker, no gateway: jobs queued as a
 * gateway queues them, their replies published to a channel this test listens to (or to one nobody listens to). A row
 * is written only where a caller can have been given the task id (a 504): none for an answer in time; a completed one
 * for a reply that reached no gateway or a job that ran as long as its gateway waits; a failed one for a refusal nobody
 * received; and a row that cannot be written never turns the answer already sent into a failure.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, QUEUE_NAMES, subscribeToReplies, whenReady } from "@mdp/queues";
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const ROOT = "urn:li:corpuser:admin";
const HIVE = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

/** A dataset to evaluate, a reply channel listened to, and a way to queue evaluate jobs as a gateway does. */
async function gatewaySide(w: WorkerFixture) {
  await w.ingest(HIVE, "datasetProperties", { description: "All orders" });
  const redis = createRedis(w.config.REDIS_URL, "producer");
  const subscriber = createRedis(w.config.REDIS_URL, "subscriber");
  // a producer's connection queues no command while a cluster connects: the queue's first one waits for it
  await Promise.all([whenReady(redis), whenReady(subscriber)]);
  const listening = `${Date.now()}:listening`;
  const replies: string[] = [];
  await subscribeToReplies(subscriber, listening, (message) => replies.push(message));
  const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: w.config.QUEUE_PREFIX });
  w.defer(async () => {
    await queue.close();
    await closeRedis(subscriber);
    await closeRedis(redis);
  });
  /** Queues an evaluate job as a gateway does (waiting 30 s), waits for it to end, and returns its task's row. */
  const evaluateJob = async (options: { replyTo: string; urn?: string; queuedMsAgo?: number }) => {
    const taskId = randomUUID();
    const item = { taskId, urns: [options.urn ?? HIVE], push: false, actorUrn: ROOT };
    const job = await queue.add(
      "evaluate",
      { kind: "evaluate", items: [item], replyTo: options.replyTo, waitMs: 30_000 },
      { jobId: randomUUID(), timestamp: Date.now() - (options.queuedMsAgo ?? 0) },
    );
    await eventually("the evaluate job completed", () => job.getState(), { until: (state) => state === "completed" });
    return w.database.prisma.task.findUnique({ where: { id: taskId } });
  };
  return { listening, replies, queue, evaluateJob };
}

describe("the rows of evaluate jobs, in the worker", () => {
  workerTest("answered in time: the reply reached its gateway, and no row is written", async (w) => {
    const { listening, replies, evaluateJob } = await gatewaySide(w);
    expect(await evaluateJob({ replyTo: listening })).toBeNull();
    expect(replies).toHaveLength(1);
  });

  workerTest("a reply that reached no gateway: its caller will get a 504, so the row is completed", async (w) => {
    const { listening, evaluateJob } = await gatewaySide(w);
    expect(await evaluateJob({ replyTo: `${listening}:gone` })).toMatchObject({
      type: "EVALUATE_TESTS",
      state: "completed",
      request: { kind: "evaluate", urns: [HIVE], push: false },
      progress: { evaluated: 1, total: 1, percent: 100 },
      result: { results: { [HIVE]: { urn: HIVE } } },
      attemptsMade: 1,
    });
  });

  workerTest(
    "a job that ran as long as its gateway waits: the row is completed, the reply delivered or not",
    async (w) => {
      const { listening, evaluateJob } = await gatewaySide(w);
      expect(await evaluateJob({ replyTo: listening, queuedMsAgo: 30_000 })).toMatchObject({ state: "completed" });
    },
  );

  workerTest("a row that cannot be written does not turn the answer already sent into a failure", async (w) => {
    const { listening, replies, queue } = await gatewaySide(w);
    // Every write of an evaluation's row fails while this trigger exists.
    await w.database.pool.query(`
      CREATE FUNCTION refuse_evaluation_rows() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'task rows refused by the test'; END $$;
      CREATE TRIGGER refuse_evaluation_rows BEFORE INSERT OR UPDATE ON task
        FOR EACH ROW WHEN (NEW.type = 'EVALUATE_TESTS') EXECUTE FUNCTION refuse_evaluation_rows()`);
    const taskId = randomUUID();
    const job = await queue.add(
      "evaluate",
      {
        kind: "evaluate",
        items: [{ taskId, urns: [HIVE], push: false, actorUrn: ROOT }],
        replyTo: listening,
        waitMs: 30_000,
      },
      { jobId: randomUUID(), timestamp: Date.now() - 30_000, attempts: 1 },
    );
    // the job's record failed, not the answer
    await eventually("the evaluate job failed", () => job.getState(), { until: (state) => state === "failed" });
    expect(replies.map((r) => JSON.parse(r) as Record<string, unknown>)).toEqual([
      {
        jobId: job.id,
        returnvalue: {
          items: { [taskId]: { resultsJson: { [HIVE]: expect.any(String) }, evaluationMs: expect.any(Number) } },
        },
      },
    ]);
  });

  workerTest("a refusal nobody received: the row is failed and says why", async (w) => {
    const { listening, evaluateJob } = await gatewaySide(w);
    const ghost = "urn:li:dataset:(urn:li:dataPlatform:hive,ghost,PROD)";
    expect(await evaluateJob({ replyTo: `${listening}:gone`, urn: ghost })).toMatchObject({
      state: "failed",
      failedReason: `Entity ${ghost} does not exist`,
    });
  });
});
