/**
 * What changed since the last run (test-run-diff.ts), in one worker, no gateway: each runTest that pushes records, batch
 * by batch, the entities newly failing, newly passing and flapping compared with the test's previous run; lists are
 * cut at 100 entities with the whole count; a test keeps its last TEST_RUN_DIFF_MAX_RUNS runs; retention prunes them.
 * How testRunDiff answers them (types, NOT_FOUND) is tested through the gateway, services/gateway/test/test-run-diff.int.spec.ts.
 */
import { findRunDiff, inTransaction, openRunDiff } from "@mdp/db";
import { TestHistoryRetention } from "../src/test-result-history";
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const OWNER = "urn:li:corpuser:admin";
const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,diff.${name},PROD)`;
const A = dataset("a");
const B = dataset("b");
const C = dataset("c");
const described = (selector: string) => ({
  on: {
    types: ["dataset"],
    conditions: { property: "datasetProperties.name", operator: "equals", values: [selector] },
  },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
});

/** Sets each dataset's name (the test's selector) and description. */
const describe_ = async (w: WorkerFixture, entries: Array<[urn: string, name: string, description: string]>) => {
  for (const [urn, name, description] of entries) await w.ingest(urn, "datasetProperties", { name, description });
};
/** A test that evaluates only when run (so that nothing but its runs pushes it). */
const createTest = (w: WorkerFixture, id: string, selector: string) =>
  w.createTest(id, described(selector), OWNER, { evaluateOnChange: false });
/** Runs the test with push to its end, in batches of `batchSize`; answers the run's id. */
const run = async (w: WorkerFixture, testUrn: string, batchSize = 2) => {
  const taskId = await w.runTest(testUrn, OWNER, { batchSize });
  expect(await w.waitForTask(taskId, ["completed", "failed"])).toMatchObject({ state: "completed" });
  return taskId;
};
const diff = async (w: WorkerFixture, testUrn: string, runId: string | null = null) =>
  (await findRunDiff(w.database.pool, testUrn, runId))!;

describe("run diffs, in the worker", () => {
  workerTest("records per run what newly fails, newly passes and flaps, against the test's previous run", async (w) => {
    await describe_(w, [
      [A, "abc", "all orders"],
      [B, "abc", "nothing"],
      [C, "abc", "orders again"],
    ]);
    const test = await createTest(w, "orders-described", "abc");

    // The first run: every result is new (compared with none), so each entity is in one list, previous null.
    const first = await run(w, test);
    const one = await diff(w, test, first);
    expect(one).toMatchObject({
      testUrn: test,
      runId: first,
      previousRunId: null,
      evaluated: 3,
      newlyPassingCount: 2,
      newlyPassing: [
        { urn: A, previous: null },
        { urn: C, previous: null },
      ],
      newlyFailingCount: 1,
      newlyFailing: [{ urn: B, previous: null }],
      flappingCount: 0,
      flapping: [],
    });

    // Between runs A breaks and B is fixed; C stays. The second run lists only those two, against the first run.
    await describe_(w, [
      [A, "abc", "nothing"],
      [B, "abc", "orders now"],
    ]);
    const second = await run(w, test);
    const two = await diff(w, test, second);
    expect(two).toMatchObject({
      previousRunId: first,
      evaluated: 3,
      newlyFailing: [{ urn: A, previous: true }],
      newlyPassing: [{ urn: B, previous: false }],
      flappingCount: 0,
    });
    expect(two.baselineAt).toEqual(one.lastBatchAt);
    // The first run's diff is still there as it was.
    expect(await diff(w, test, first)).toEqual(one);

    // C breaks between the second and third runs.
    await describe_(w, [[C, "abc", "nothing"]]);
    const third = await diff(w, test, await run(w, test));
    expect(third.previousRunId).toBe(second);
    expect(third.newlyFailing).toEqual([{ urn: C, previous: true }]);
    expect(third.newlyPassingCount).toBe(0);

    // A flips back and forth: passing again, then failing again. Its changes since the window's start (the first of
    // the last TEST_RUN_DIFF_FLAP_RUNS = 5 runs) are more than TEST_RUN_DIFF_FLAP_CHANGES (2), so it flaps.
    await describe_(w, [
      [A, "abc", "orders"],
      [C, "abc", "orders"],
    ]);
    const fourth = await run(w, test);
    await describe_(w, [[A, "abc", "no"]]);
    const fifth = await run(w, test);
    const five = await diff(w, test, fifth);
    expect(five.previousRunId).toBe(fourth);
    expect(five.newlyFailing).toEqual([{ urn: A, previous: true }]);
    // A: first result, then fail (2nd run), pass (4th), fail (5th): 3 changes; C: fail (3rd), pass (4th): 2.
    expect(five).toMatchObject({ flappingCount: 1, flapping: [{ urn: A, passing: false, changes: 3 }] });
    // Without a run id: the latest run.
    expect((await diff(w, test)).runId).toBe(fifth);
  });

  workerTest("cuts a long list at 100 entities, keeping the whole count", async (w) => {
    const many = Array.from({ length: 105 }, (_, i) => dataset(`many${String(i).padStart(3, "0")}`));
    await describe_(
      w,
      many.map((urn) => [urn, "many", "undocumented"]),
    );
    const test = await createTest(w, "many-described", "many");
    const d = await diff(w, test, await run(w, test, 50));
    expect(d).toMatchObject({ evaluated: 105, newlyFailingCount: 105, newlyPassingCount: 0, newlyPassing: [] });
    expect(d.newlyFailing.map((e) => e.urn)).toEqual(many.slice(0, 100));
  });

  workerTest("does not record a run without push", async (w) => {
    await describe_(w, [[A, "abc", "all orders"]]);
    const test = await createTest(w, "never-pushed", "abc");
    const dry = await w.runTest(test, OWNER, { push: false });
    expect(await w.waitForTask(dry, ["completed", "failed"])).toMatchObject({ state: "completed" });
    expect(await findRunDiff(w.database.pool, test, dry)).toBeNull();
    expect(await findRunDiff(w.database.pool, test, null)).toBeNull();
  });

  workerTest(
    "keeps the last TEST_RUN_DIFF_MAX_RUNS runs of a test: a run that starts deletes the oldest",
    async (w) => {
      const test = "urn:li:test:capped";
      const open = (runId: string, at: number) =>
        inTransaction(w.database.pool, (client) =>
          openRunDiff(client, { runId, testUrn: test, at: new Date(at), flapChanges: 2, flapRuns: 5, maxRuns: 2 }),
        );
      await open("capped-1", 1_000);
      await open("capped-2", 2_000);
      const third = await open("capped-3", 3_000);
      // Compared with the run before it, which had no batch yet: its start.
      expect(third).toMatchObject({
        previousRunId: "capped-2",
        baselineAt: new Date(2_000),
        flapSince: new Date(1_000),
      });
      const kept = await w.database.pool.query<{ run_id: string }>(
        "SELECT run_id FROM test_run_diff WHERE test_urn = $1 ORDER BY started_at",
        [test],
      );
      expect(kept.rows.map((r) => r.run_id)).toEqual(["capped-2", "capped-3"]);
    },
  );

  workerTest("prunes run diffs older than the history's retention with the history", async (w) => {
    await describe_(w, [[A, "abc", "all orders"]]);
    const test = await createTest(w, "pruned", "abc");
    const old = await run(w, test);
    const recent = await run(w, test);
    await w.database.pool.query(`UPDATE test_run_diff SET started_at = now() - interval '400 days' WHERE run_id = $1`, [
      old,
    ]);
    await new TestHistoryRetention(w.database.pool, 365).prune();
    expect(await findRunDiff(w.database.pool, test, old)).toBeNull();
    expect(await findRunDiff(w.database.pool, test, recent)).not.toBeNull();
  });
});
