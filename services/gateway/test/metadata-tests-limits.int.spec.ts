/**
 * Evaluations past the worker's limits, as the gateway answers them (real gateway, a real evaluation worker in process,
 * real PostgreSQL and Redis): EVALUATION_TIME_LIMIT_MS stops an evaluation with a 400 naming it while the worker goes
 * on serving, other callers' requests batched with a slow one answered at once, runTest and impact previews stopped
 * at the limit too, and a stored definition past a definition limit refused at once without retries.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, QUEUE_NAMES, subscribeToReplies, whenReady } from "@mdp/queues";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { USER, VIEWER, EVALUATE, RUN, aspect, type EvaluatePayload } from "./support/metadata-tests";

describe("metadata tests: evaluations past the worker's limits", () => {
  let h: Harness;
  let worker: RunningWorker;
  /** plain data, evaluated at once */
  const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.plain,PROD)";
  /** 20,000 tags: what the hog test scans, and what makes it slow (first in urn order) */
  const HOG = "urn:li:dataset:(urn:li:dataPlatform:hive,db.hog,PROD)";
  const TIME_LIMIT_MS = 1000;
  const asRoot = systemClientHeaders(ROOT);
  const createTest = (id: string, rules: unknown) =>
    h.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id,
          name: id,
          category: "x",
          definition: { json: JSON.stringify({ on: { types: ["dataset"] }, rules }) },
        },
      },
      asRoot,
    );
  const stoppedAt = (test: string, urn: string) =>
    `Evaluation of test ${test} on ${urn} stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS)`;
  const waitForEnd = (taskId: string) =>
    eventually(
      `task ${taskId} ended`,
      async () =>
        (await h.post("/gms/operations?action=getTaskStatus", { taskId }, asRoot)).body.value as Record<
          string,
          unknown
        >,
      { timeoutMs: 15_000, until: (status) => status.state !== "waiting" && status.state !== "active" },
    );

  beforeAll(async () => {
    h = await startGateway({ EVALUATION_TIME_LIMIT_MS: String(TIME_LIMIT_MS) });
    worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, USER, ["VIEW_TESTS"]);
    await h.post(
      "/gms/aspects?action=ingestProposal",
      { proposal: aspect(DATASET, "datasetProperties", { description: "plain" }) },
      asRoot,
    );
    // Written straight to the table: 2 MB of tags is more than one ingestion request may carry (1 MiB).
    const tags = Array.from({ length: 20_000 }, (_, i) => ({ tag: `urn:li:tag:${"t".repeat(80)}${i}` }));
    await h.database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, 'globalTags', 0, 'dataset', $2::jsonb, $3)`,
      [HOG, JSON.stringify({ tags }), ROOT],
    );
    // A legal definition (within every definition limit: 150 predicates of 40 short operands, ~50 KB) whose
    // evaluation on HOG takes seconds: 150 × 40 substrings searched in 20,000 tags. regex_match cannot be the slow
    // case any more: it runs on RE2, in linear time.
    const created = await createTest("hog", {
      or: Array.from({ length: 150 }, (_, i) => ({
        property: "globalTags.tags.tag",
        operator: "contains_str",
        values: Array.from({ length: 40 }, (_, j) => `${i.toString(36)}!${j.toString(36)}`),
      })),
    });
    expect(created.body).toEqual({ data: { createTest: "urn:li:test:hog" } });
    await createTest("described", { property: "datasetProperties.description", operator: "exists" });
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("stops the evaluation at EVALUATION_TIME_LIMIT_MS with a 400 naming it, and the worker goes on serving", async () => {
    const started = Date.now();
    const res = await h.post(EVALUATE, { urn: HOG, testUrns: ["urn:li:test:hog"] }, asRoot);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(res).toMatchObject({
      status: 400,
      body: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
    });

    const next = await h.post(EVALUATE, { urn: DATASET, testUrns: ["urn:li:test:described"] }, asRoot);
    expect(next).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
  });

  it("answers other callers' requests batched with a slow one at once, not when the slow one is stopped", async () => {
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const timed = async (urn: string, testUrns: string[], actor: string) => {
        const started = performance.now();
        const res = await h.post(EVALUATE, { urn, testUrns }, systemClientHeaders(actor));
        return { res, ms: performance.now() - started };
      };
      // Two callers with the same privileges, each read once before, so that their requests take as many turns of
      // the gateway's event loop to reach the batcher.
      // Five at once also leave five idle connections, so that no request below waits for a connection to open.
      await Promise.all(
        [VIEWER, USER, USER, USER, USER].map((actor) => timed(DATASET, ["urn:li:test:described"], actor)),
      );
      // Sent in one turn of the event loop, so the gateway reads them together and puts them into one job.
      const hog = timed(HOG, ["urn:li:test:hog"], VIEWER);
      const harmless = Array.from({ length: 4 }, () => timed(DATASET, ["urn:li:test:described"], USER));
      const answers = await Promise.all(harmless);
      for (const { res } of answers) {
        expect(res).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
      }
      // A few ms unloaded: bounded at half the hog's limit, which a wait for the hog (which answered them only after
      // TIME_LIMIT_MS before) cannot meet; a third was met with 1 ms to spare on a loaded machine.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(TIME_LIMIT_MS / 2);
      const { res, ms } = await hog;
      expect(ms).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
      expect(res).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
      });
      // The hog and the others were once one job, which held every answer until the hog was stopped. Now each request
      // is answered on its own, and another actor's requests never share the hog's job at all (a job holds its worker
      // slot until its slowest request ends; slots are shared by actor).
      const jobs = await queue.getJobs(["completed"]);
      const hogJob = jobs.find((j) => (j.data as EvaluatePayload).items?.some((i) => i.urns.includes(HOG)));
      expect((hogJob?.data as EvaluatePayload).items.filter((i) => i.actorUrn === USER)).toEqual([]);
    } finally {
      await queue.close();
      await closeRedis(redis);
    }
  });

  it("refuses only the slow request of a job, answering the others first", async () => {
    const redis = createRedis(h.config.REDIS_URL, "producer");
    const subscriber = createRedis(h.config.REDIS_URL, "subscriber");
    const queue = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const channel = `replies-${randomUUID()}`;
      const replies: Array<{ items: Record<string, unknown>; partial?: true }> = [];
      let allReplied = () => {};
      const all = new Promise<void>((resolve) => (allReplied = resolve));
      await whenReady(subscriber);
      await subscribeToReplies(subscriber, channel, (m) => {
        const { returnvalue } = JSON.parse(m) as { returnvalue: (typeof replies)[number] };
        replies.push(returnvalue);
        if (!returnvalue.partial) allReplied();
      });
      const [slow, quick] = [randomUUID(), randomUUID()];
      // Two actors (as a gateway of an earlier version could batch them): one actor's slow request holds one of the
      // worker's threads, and with two threads that is its share, so another actor's request takes the other.
      const item = (taskId: string, urn: string, test: string, actorUrn: string) => ({
        taskId,
        urns: [urn],
        push: false,
        testUrns: [test],
        actorUrn,
      });
      await queue.add(
        "evaluate",
        {
          kind: "evaluate",
          items: [item(slow, HOG, "urn:li:test:hog", VIEWER), item(quick, DATASET, "urn:li:test:described", USER)],
          replyTo: channel,
          waitMs: 30_000,
        },
        { jobId: randomUUID() },
      );
      await all;
      expect(replies.map((r) => Object.keys(r.items))).toEqual([[quick], [slow]]);
      expect(replies[0]!.partial).toBe(true);
      expect(replies[1]!.items[slow]).toEqual({
        refused: { code: "BAD_USER_INPUT", message: expect.stringContaining(stoppedAt("urn:li:test:hog", HOG)) },
        evaluationMs: expect.any(Number),
      });
      const { resultsJson } = replies[0]!.items[quick] as { resultsJson: Record<string, string> };
      expect(JSON.parse(resultsJson[DATASET]!)).toMatchObject({ passing: [{ test: "urn:li:test:described" }] });
    } finally {
      await queue.close();
      await closeRedis(subscriber);
      await closeRedis(redis);
    }
  });

  it("fails a runTest at the batch that ran too long, saying how far it got", async () => {
    const run = await h.graphql(RUN, { urn: "urn:li:test:hog", push: false }, asRoot);
    const taskId = (run.body.data as { runTest: string }).runTest;
    const status = await waitForEnd(taskId);
    expect(status).toMatchObject({ state: "failed" });
    expect(status.failedReason).toContain(`stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS)`);
    expect(status.failedReason).toContain("0 entities were evaluated before it.");
  });

  it("stops an impact preview at EVALUATION_TIME_LIMIT_MS too, in the worker, naming the limit", async () => {
    const started = Date.now();
    const described = JSON.stringify({
      on: { types: ["dataset"] },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
    const res = await h.graphql(
      `query($j: String!) { previewTestImpact(urn: "urn:li:test:hog", definition: {json: $j}) { sampled } }`,
      { j: described },
      asRoot,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
    expect(res.body.errors?.[0]).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: expect.stringContaining(`stopped after ${TIME_LIMIT_MS} ms (EVALUATION_TIME_LIMIT_MS) for a preview of`),
    });
    expect(res.body.errors?.[0]?.message).toContain("Preview fewer entities (sampleSize).");
  });

  describe("a stored definition past a definition limit (a row written before the limit existed)", () => {
    // 40 dot-separated segments: the limit is 32 (DEFINITION_LIMITS), so createTest would refuse it.
    const property = Array.from({ length: 40 }, (_, i) => `s${i}`).join(".");
    const OLD = "urn:li:test:old";
    beforeAll(async () => {
      await h.prisma.metadataTest.create({
        data: {
          urn: OLD,
          name: "old",
          category: "x",
          definitionText: JSON.stringify({ on: { types: ["dataset"] }, rules: { property, operator: "exists" } }),
          definition: { on: { types: ["dataset"] }, rules: { property, operator: "exists" } },
          onTypes: ["dataset"],
          createdBy: ROOT,
          ownerUrn: ROOT,
        },
      });
    });
    afterAll(async () => {
      await h.prisma.metadataTest.delete({ where: { urn: OLD } });
    });
    const refusal = `Test ${OLD} cannot be evaluated: its stored definition is refused. Failed to validate test definition: rules.property: 40 dot-separated segments, more than the limit of 32`;

    it("is a 400 naming the test and the limit, at once: no retries, and the others batched with it answered", async () => {
      const started = performance.now();
      const [old, other] = await Promise.all([
        h.post(EVALUATE, { urn: DATASET, testUrns: [OLD] }, asRoot),
        h.post(EVALUATE, { urn: DATASET, testUrns: ["urn:li:test:described"] }, systemClientHeaders(VIEWER)),
      ]);
      // A failure would be retried 5 times, 0.25 to 4 s apart (at least 7.75 s), then answered 500; a loaded CI
      // machine has taken more than 2 s to answer at once.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(old).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining(refusal) },
      });
      expect(other).toMatchObject({ status: 200, body: { value: { passing: [{ test: "urn:li:test:described" }] } } });
      // Evaluating the ACTIVE tests of a dataset needs it too: refused the same way.
      const active = await h.post(EVALUATE, { urn: DATASET }, asRoot);
      expect(active).toMatchObject({ status: 400, body: { message: expect.stringContaining(refusal) } });
    });

    it("fails a runTest of it at once, saying why, without retrying", async () => {
      const run = await h.graphql(RUN, { urn: OLD, push: false }, asRoot);
      const taskId = (run.body.data as { runTest: string }).runTest;
      const status = await waitForEnd(taskId);
      expect(status).toMatchObject({ state: "failed", failedReason: expect.stringContaining(refusal) });
      expect(status.attemptsMade).toBe(1);
    });
  });
});
