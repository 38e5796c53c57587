/**
 * runTest in one worker, no gateway: a run evaluates every entity its test selects in batches, with progress in its
 * task row and on its job (the queue dashboard's copy), and pushes each entity's result; without push it walks every
 * entity once in batches read ahead of their evaluation, with exact counts, and writes nothing; entities whose
 * conditions do not hold count as not applicable. How the gateway starts, refuses and cancels runs is tested through it
 * (services/gateway/test/metadata-tests-runs.int.spec.ts).
 */
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const OWNER = "urn:li:corpuser:admin";
const N = 25;
/** every fifth on hive, the others on kafka; the even ones described */
const datasetUrn = (i: number) =>
  `urn:li:dataset:(urn:li:dataPlatform:${i % 5 === 0 ? "hive" : "kafka"},run.t${String(i).padStart(2, "0")},PROD)`;
const DESCRIBED = Math.ceil(N / 2);
const HAS_DESCRIPTION = {
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
};

/** On the hive datasets only (the others: not applicable), tagged urn:li:tag:none. */
const HIVE_TAGGED = {
  on: {
    types: ["dataset"],
    conditions: { property: "platform", operator: "equals", value: "urn:li:dataPlatform:hive" },
  },
  rules: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:none"] },
};

/** The N datasets, and a test of their description that only runs evaluate (not evaluation on change). */
async function datasetsAndTest(w: WorkerFixture): Promise<string> {
  for (let i = 0; i < N; i++) {
    await w.ingest(datasetUrn(i), "datasetProperties", i % 2 === 0 ? { description: "even" } : { name: "odd" });
  }
  return w.createTest("described", HAS_DESCRIPTION, OWNER, { evaluateOnChange: false });
}

describe("runTest, in the worker", () => {
  workerTest(
    "evaluates every selected entity in batches, with progress in its row and on its job, and pushes",
    async (w) => {
      const test = await datasetsAndTest(w);
      const taskId = await w.runTest(test, OWNER, { batchSize: 10 });
      expect(await w.waitForTask(taskId, ["completed", "failed"])).toMatchObject({
        type: "EVALUATE_TESTS",
        state: "completed",
        request: { kind: "runTest", testUrn: test, push: true, batchSize: 10 },
        progress: {
          evaluated: N,
          total: N,
          passing: DESCRIBED,
          failing: N - DESCRIBED,
          notApplicable: 0,
          percent: 100,
          batches: Math.ceil(N / 10),
        },
        result: { evaluated: N, passing: DESCRIBED, failing: N - DESCRIBED },
        attemptsMade: 1,
      });
      for (let i = 0; i < N; i++) {
        expect([i, await w.resultOf(datasetUrn(i), test)]).toEqual([i, i % 2 === 0 ? "passing" : "failing"]);
      }
      // The dashboard shows the same progress (BullMQ's own copy of it).
      const job = await w.job(taskId);
      expect(job?.name).toBe("runTest");
      expect(job?.progress).toMatchObject({ evaluated: N, total: N, percent: 100 });
    },
  );

  workerTest(
    "a run again writes each changed result as the entity's next testResults version, and nothing for the others",
    async (w) => {
      const test = await datasetsAndTest(w);
      expect(
        await w.waitForTask(await w.runTest(test, OWNER, { batchSize: 10 }), ["completed", "failed"]),
      ).toMatchObject({ state: "completed" });
      await w.ingest(datasetUrn(1), "datasetProperties", { description: "now described" });
      const again = await w.waitForTask(await w.runTest(test, OWNER, { batchSize: 10 }), ["completed", "failed"]);
      expect(again).toMatchObject({ state: "completed", progress: { evaluated: N, pushed: 1 } });
      // The batch read brought each entity's stored version under its lock: the push built on it.
      expect(await w.latest(datasetUrn(1), "testResults")).toMatchObject({ version: 2 });
      expect(await w.resultOf(datasetUrn(1), test)).toBe("passing");
      expect(await w.latest(datasetUrn(0), "testResults")).toMatchObject({ version: 1 });
    },
  );

  workerTest(
    "with push, keeps other tests' results, drops a deleted test's with the entity's next write, and counts the rest",
    async (w) => {
      const described = await datasetsAndTest(w);
      const done = (taskId: string) => w.waitForTask(taskId, ["completed", "failed"]);
      expect(await done(await w.runTest(described, OWNER, { batchSize: 10 }))).toMatchObject({ state: "completed" });
      const hiveTagged = await w.createTest("push-hive", HIVE_TAGGED, OWNER, { evaluateOnChange: false });
      // The hive ones fail (untagged) and are written; the kafka ones are not applicable and keep what they had.
      expect(await done(await w.runTest(hiveTagged, OWNER, { batchSize: 10 }))).toMatchObject({
        state: "completed",
        progress: { evaluated: N, passing: 0, failing: N / 5, notApplicable: N - N / 5, pushed: N / 5 },
      });
      expect([await w.resultOf(datasetUrn(0), described), await w.resultOf(datasetUrn(0), hiveTagged)]).toEqual([
        "passing",
        "failing",
      ]);
      expect(await w.latest(datasetUrn(1), "testResults")).toMatchObject({ version: 1 });
      // The first test deleted: an entity whose result changes loses its entry; one whose result stands keeps it.
      await w.database.pool.query("DELETE FROM metadata_test WHERE urn = $1", [described]);
      await w.ingest(datasetUrn(0), "globalTags", { tags: [{ tag: "urn:li:tag:none" }] });
      expect(await done(await w.runTest(hiveTagged, OWNER, { batchSize: 10 }))).toMatchObject({
        state: "completed",
        progress: { passing: 1, failing: N / 5 - 1, pushed: 1 },
      });
      expect([await w.resultOf(datasetUrn(0), described), await w.resultOf(datasetUrn(0), hiveTagged)]).toEqual([
        undefined,
        "passing",
      ]);
      expect(await w.resultOf(datasetUrn(10), described)).toBe("passing");
    },
  );

  workerTest(
    "without push, walks every entity once in batches read ahead of their evaluation, with exact counts",
    async (w) => {
      const test = await datasetsAndTest(w);
      // Batches of 3: each batch after the first is read while the one before it is evaluated.
      const taskId = await w.runTest(test, OWNER, { push: false, batchSize: 3 });
      expect(await w.waitForTask(taskId, ["completed", "failed"])).toMatchObject({
        state: "completed",
        progress: {
          evaluated: N,
          total: N,
          passing: DESCRIBED,
          failing: N - DESCRIBED,
          notApplicable: 0,
          percent: 100,
          batches: Math.ceil(N / 3),
          pushed: 0,
        },
      });
      expect(await w.latest(datasetUrn(0), "testResults")).toBeUndefined(); // nothing written without push
    },
  );

  workerTest(
    "counts entities whose conditions do not hold as not applicable, and writes nothing without push",
    async (w) => {
      await datasetsAndTest(w);
      const hiveTagged = await w.createTest("run-hive", HIVE_TAGGED, OWNER, { evaluateOnChange: false });
      const taskId = await w.runTest(hiveTagged, OWNER, { push: false });
      const done = await w.waitForTask(taskId, ["completed", "failed"]);
      expect(done).toMatchObject({ state: "completed" });
      // The hive ones fail (untagged); the kafka ones are not applicable.
      expect(done.progress).toMatchObject({
        evaluated: N,
        passing: 0,
        failing: N / 5,
        notApplicable: N - N / 5,
        batches: 1,
      });
      const pushed = await w.database.pool.query(
        "SELECT 1 FROM aspect WHERE aspect_name = 'testResults' AND value::text LIKE $1",
        [`%${hiveTagged}%`],
      );
      expect(pushed.rowCount).toBe(0);
    },
  );
});
