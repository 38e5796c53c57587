/**
 * Evaluations whose answers do not reach their caller in time, against the real gateway and a real evaluation worker
 * in process (real PostgreSQL and Redis): the 504 with a task id that getTaskStatus follows to the end, a task never
 * shown cancelled once its results were pushed, and a 504's task ended failed, saying why, when the answer was lost.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { AspectRepository, inTransaction } from "@mdp/db";
import { closeRedis, createRedis, QUEUE_NAMES } from "@mdp/queues";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { EVALUATE, aspect } from "./support/metadata-tests";

describe("metadata tests: evaluation timeout", () => {
  let h: Harness;
  let worker: RunningWorker | undefined;
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.slow,PROD)";

  beforeAll(async () => {
    h = await startGateway({ EVALUATE_TIMEOUT_MS: "300" });
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "slow" }) },
      systemClientHeaders(ROOT),
    );
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("answers 504 with the task id when no worker answers in time; getTaskStatus follows it to the end", async () => {
    const started = Date.now();
    const res = await h.post(EVALUATE, { urn: DATASET });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res).toMatchObject({
      status: 504,
      body: { status: 504, code: "GATEWAY_TIMEOUT", details: { taskId: expect.any(String) } },
    });
    const taskId = (res.body as { details: { taskId: string } }).details.taskId;
    expect(res.body.message).toContain(`task ${taskId}`);
    const status = async () =>
      (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
    expect(await status()).toMatchObject({ taskId, type: "EVALUATE_TESTS", state: "waiting" });

    // A second one, with push, is cancelled before any worker gets to it: it must then neither push nor complete.
    const created = await h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id: "slow",
          name: "slow",
          category: "x",
          definition: { json: "on: {types: [dataset]}\nrules: {property: urn, operator: exists}" },
        },
      },
      systemClientHeaders(ROOT),
    );
    expect(created.body.data).toEqual({ createTest: "urn:li:test:slow" });
    const pushed = await h.post(EVALUATE, { urn: DATASET, push: true });
    const cancelledId = (pushed.body as { details: { taskId: string } }).details.taskId;
    const cancel = await h.post("/gms/operations?action=cancelTask", { taskId: cancelledId });
    expect(cancel.body.value).toMatchObject({ state: "cancelled" });

    worker = await startEvaluationWorker(h);
    await eventually("the task completed", status, { timeoutMs: 15_000, until: (s) => s.state === "completed" });
    expect(await status()).toMatchObject({
      state: "completed",
      result: { results: { [DATASET]: { urn: DATASET, passing: [{ test: "urn:li:test:slow" }], failing: [] } } },
    });
    const after = await h.post("/gms/operations?action=getTaskStatus", { taskId: cancelledId });
    expect(after.body.value).toMatchObject({ state: "cancelled" });
    const stored = await h.prisma.aspect.count({ where: { urn: DATASET, aspectName: "testResults" } });
    expect(stored).toBe(0);
  });

  it("never shows a task cancelled whose results were pushed: one found past its start is only asked to stop", async () => {
    const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.contended,PROD)";
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(target, "datasetProperties", { description: "contended" }) },
      systemClientHeaders(ROOT),
    );
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    // Another push holds the entity's testResults lock, so this evaluation's push waits behind it, past its 504.
    const other = inTransaction(h.database.pool, async (client) => {
      await new AspectRepository().lock(client, [{ urn: target, aspectName: "testResults" }]);
      locked();
      await released;
    });
    await lockTaken;
    try {
      const res = await h.post(EVALUATE, { urn: target, push: true, testUrns: ["urn:li:test:slow"] });
      expect(res.status).toBe(504);
      const taskId = (res.body as { details: { taskId: string } }).details.taskId;
      const status = async () =>
        (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
      await eventually("the task active", status, { until: (s) => s.state === "active" });
      const cancel = await h.post("/gms/operations?action=cancelTask", { taskId });
      expect(cancel.body.value).toMatchObject({ state: "active", cancelRequested: true });
      release();
      await other;
      await eventually("the task no longer active", status, { until: (s) => s.state !== "active" });
      expect(await status()).toMatchObject({ state: "completed", cancelRequested: true });
      const entity = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(target)}`, {
        headers: systemClientHeaders(ROOT),
      });
      expect(await entity.json()).toMatchObject({
        value: { aspects: { testResults: { passing: [{ test: "urn:li:test:slow" }] } } },
      });
    } finally {
      release();
      await other;
    }
  });
});

describe("metadata tests: an answer that never reaches the gateway", () => {
  /**
   * The gateway's wait: the job must end within it, less the second the worker allows for clocks (so that it writes
   * no row), for the 504's row to be the gateway's to end. 3 s left the job too little on a loaded machine (it ended
   * after 2 s, so its worker kept the answer, and the task ended completed: the answer that never reached a gateway).
   */
  const WAIT_MS = 6000;
  let h: Harness;
  let worker: RunningWorker;
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.lost,PROD)";

  beforeAll(async () => {
    h = await startGateway({ EVALUATE_TIMEOUT_MS: String(WAIT_MS) });
    worker = await startEvaluationWorker(h, 4, { loseReplies: true });
    // The condition the test needs, waited for rather than assumed: a worker that answers at once. Its first job
    // waits for the threads to load their modules, which on a loaded machine took longer than the gateway's wait.
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const jobId = randomUUID();
      await queue.add(
        "evaluate",
        {
          kind: "evaluate",
          items: [{ taskId: randomUUID(), urns: ["urn:li:corpuser:nobody"], push: false, actorUrn: ROOT }],
          replyTo: `replies-${randomUUID()}`,
          waitMs: 30_000,
        },
        { jobId },
      );
      await eventually("the warm-up job completed", () => queue.getJobState(jobId), {
        timeoutMs: 30_000,
        until: (state) => state === "completed",
      });
    } finally {
      await queue.close();
      await closeRedis(redis);
    }
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "lost" }) },
      systemClientHeaders(ROOT),
    );
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("ends the 504's task as failed, saying why, rather than waiting for good", async () => {
    // The job ends well within the wait, so its worker writes no row; its reply is lost on the way.
    const res = await h.post(EVALUATE, { urn: DATASET }, systemClientHeaders(ROOT));
    expect(res).toMatchObject({ status: 504, body: { details: { taskId: expect.any(String) } } });
    const { taskId } = (res.body as { details: { taskId: string } }).details;
    const status = await h.post("/gms/operations?action=getTaskStatus", { taskId }, systemClientHeaders(ROOT));
    expect(status.body.value).toMatchObject({
      state: "failed",
      failedReason: expect.stringContaining("its answer reached the gateway after the caller's timeout"),
    });
  });
});
