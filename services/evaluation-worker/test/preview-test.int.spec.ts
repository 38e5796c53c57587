/**
 * Impact previews (preview-test.processor.ts) in one worker, no gateway: a test's current and edited definitions
 * evaluated side by side, the flips and the actions that would fire counted over the whole set or a sample (the first
 * sampleSize entities in urn order), entities a retyped definition stops selecting counted, and nothing written.
 * previewTestImpact's privileges, input and timeout, and its answer as the API gives it, are tested through the
 * gateway: services/gateway/test/test-impact.int.spec.ts.
 */
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,impact.${name},PROD)`;
const BOTH = dataset("both"); // "all orders": passes the current and the edited definition
const ORDERS_ONLY = dataset("orders-only"); // passes the current, would fail the edited one
const ALL_ELSE = dataset("all-else"); // fails the current, would pass the edited one
const NEITHER = dataset("neither"); // fails both
const NEEDS_REVIEW = "urn:li:tag:needs-review";
const OWNER = "urn:li:corpuser:admin";

const containing = (word: string, actions?: unknown) => ({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: word },
  ...(actions !== undefined && { actions }),
});

/** The four datasets, and a test of "orders" to preview edits of. */
async function impactTest(w: WorkerFixture): Promise<string> {
  for (const [urn, description] of [
    [BOTH, "all orders"],
    [ORDERS_ONLY, "orders only"],
    [ALL_ELSE, "all else"],
    [NEITHER, "nothing"],
  ] as const) {
    await w.ingest(urn, "datasetProperties", { description });
  }
  return w.createTest("impact", containing("orders"), OWNER, { evaluateOnChange: false });
}
/** What previews must leave alone: aspects, history, tasks, the test. */
const written = async (w: WorkerFixture, test: string) =>
  (
    await w.database.pool.query<{ aspects: number; transitions: number; tasks: number; definition: string }>(
      `SELECT (SELECT count(*)::int FROM aspect) AS aspects,
              (SELECT count(*)::int FROM test_result_transition) AS transitions,
              (SELECT count(*)::int FROM task) AS tasks,
              (SELECT definition_text FROM metadata_test WHERE urn = $1) AS definition`,
      [test],
    )
  ).rows[0];

describe("impact previews, in the worker", () => {
  workerTest("counts the flips and the actions that would fire over the whole set, writing nothing", async (w) => {
    const test = await impactTest(w);
    const before = await written(w, test);
    const actions = { failing: [{ type: "ADD_TAGS", values: [NEEDS_REVIEW] }] };
    expect(await w.preview(test, containing("all", actions))).toEqual({
      testUrn: test,
      total: 4,
      sampled: 4,
      evaluatedAt: expect.any(Number),
      passToFail: { count: 1, examples: [ORDERS_ONLY] },
      failToPass: { count: 1, examples: [ALL_ELSE] },
      startsApplying: 0,
      stopsApplying: 0,
      unchangedPassing: 1,
      unchangedFailing: 1,
      // Fails: orders-only (newly) and neither (already failing before).
      actions: [{ on: "FAILURE", type: "ADD_TAGS", params: { values: [NEEDS_REVIEW] }, entities: 2, newly: 1 }],
    });
    // Nothing was stored: no results, history, tags or task, and the test is as it was.
    expect(await written(w, test)).toEqual(before);
  });

  workerTest("counts a sample: the first sampleSize entities in urn order", async (w) => {
    const test = await impactTest(w);
    // impact.all-else and impact.both come first: one fail→pass, one unchanged.
    expect(await w.preview(test, containing("all"), 2)).toMatchObject({
      total: 4,
      sampled: 2,
      failToPass: { count: 1, examples: [ALL_ELSE] },
      passToFail: { count: 0, examples: [] },
      unchangedPassing: 1,
    });
  });

  workerTest("counts entities a retyped definition stops or starts selecting", async (w) => {
    const test = await impactTest(w);
    const chart = { on: { types: ["chart"] }, rules: { property: "urn", operator: "exists" } };
    expect(await w.preview(test, chart)).toMatchObject({ total: 4, stopsApplying: 4, startsApplying: 0 });
  });
});
