/**
 * runTest as the gateway answers it (real gateway, a real evaluation worker in process, real PostgreSQL and Redis):
 * refusals (privilege, unknown test, batch size), one task for identical runs while it waits, audited, and a waiting
 * run cancelled; a run whose job BullMQ gave up on ends failed in getTaskStatus. What a run evaluates, counts and
 * pushes is tested in the worker alone (services/evaluation-worker/test/run-test.int.spec.ts).
 */
import { closeRedis, createRedis, QUEUE_NAMES, whenReady } from "@mdp/queues";
import { startEvaluationWorker } from "./support/evaluation-worker";
import { ROOT } from "./support/gateway-harness";
import { HAS_DESCRIPTION, HAS_OWNER, RUN, VIEWER, metadataTestsSetup } from "./support/metadata-tests";

describe("metadata tests: runTest", () => {
  const { ctx, gql, taskStatus, waitForTask } = metadataTestsSetup([
    ["described", HAS_DESCRIPTION],
    ["owned", HAS_OWNER],
  ]);

  it("refuses callers without MANAGE_TESTS, unknown tests and bad batch sizes", async () => {
    expect((await gql(RUN, { urn: "urn:li:test:described" }, VIEWER)).errors?.[0]?.message).toBe(
      `${VIEWER} is unauthorized to run metadata tests.`,
    );
    expect((await gql(RUN, { urn: "urn:li:test:nope" })).errors?.[0]).toMatchObject({
      message: "Test urn:li:test:nope does not exist",
      extensions: { code: "NOT_FOUND" },
    });
    expect((await gql(RUN, { urn: "urn:li:test:described", batchSize: 0 })).errors?.[0]?.extensions?.code).toBe(
      "BAD_USER_INPUT",
    );
  });

  it("returns the same task for an identical run while it waits, audited, and cancels a waiting run", async () => {
    await ctx.worker.close(); // nothing takes the job while we look at it
    try {
      const first = (await gql(RUN, { urn: "urn:li:test:owned" })).data?.runTest as string;
      expect(first).toMatch(/^[0-9a-f-]{36}$/);
      const second = (await gql(RUN, { urn: "urn:li:test:owned" })).data?.runTest as string;
      expect(second).toBe(first);
      expect(await taskStatus(first)).toMatchObject({
        type: "EVALUATE_TESTS",
        state: "waiting",
        request: { kind: "runTest", testUrn: "urn:li:test:owned", push: true },
      });
      const audit = await ctx.h.prisma.auditEvent.findMany({ where: { action: "test.run" } });
      expect(audit).toEqual([
        expect.objectContaining({
          actorUrn: ROOT,
          targetUrn: "urn:li:test:owned",
          details: expect.objectContaining({ taskId: first }),
        }),
      ]);
      const cancelled = await ctx.h.post("/gms/operations?action=cancelTask", { taskId: first });
      expect(cancelled.body.value).toMatchObject({ state: "cancelled" });
    } finally {
      ctx.worker = await startEvaluationWorker(ctx.h);
    }
  });

  it("ends as failed a run whose job BullMQ gave up on, having stalled too often", async () => {
    await ctx.worker.close();
    try {
      const taskId = (await gql(RUN, { urn: "urn:li:test:owned", batchSize: 7 })).data?.runTest as string;
      // What BullMQ's stalled-job check writes on a job whose workers died during it once too often.
      const redis = createRedis(ctx.h.config.REDIS_URL, "producer");
      await whenReady(redis);
      await redis.hset(
        `${ctx.h.config.QUEUE_PREFIX}:${QUEUE_NAMES.evaluate}:${taskId}`,
        "defa",
        "job stalled more than allowable limit",
      );
      await closeRedis(redis);
      ctx.worker = await startEvaluationWorker(ctx.h);
      expect(await waitForTask(taskId, ["failed", "completed"])).toMatchObject({
        state: "failed",
        failedReason: "Given up after its workers stopped during it too often: job stalled more than allowable limit",
      });
    } finally {
      await ctx.worker.close();
      ctx.worker = await startEvaluationWorker(ctx.h);
    }
  });
});
