import type { EntityEvaluation, EntitySnapshot, ParsedDefinition } from "@mdp/metadata-tests";
import { mergeBatch } from "./batch-push";

const RUN = "urn:li:test:run";
const OTHER = "urn:li:test:other";
const DELETED = "urn:li:test:deleted";
const urn = (n: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,t${n},PROD)`;

const evaluation = (n: number, outcome: "pass" | "fail" | "none"): EntityEvaluation => ({
  urn: urn(n),
  passing: outcome === "pass" ? [{ test: RUN, type: "SUCCESS" }] : [],
  failing: outcome === "fail" ? [{ test: RUN, type: "FAILURE", failedRules: [] }] : [],
  notApplicable: outcome === "none" ? [RUN] : [],
  evaluatedAt: 5,
});

const definition = (actions?: ParsedDefinition["actions"]): ParsedDefinition => ({
  on: { types: ["dataset"] },
  rules: { property: "x", operator: "exists" } as never,
  ...(actions && { actions }),
});

/** The batch's entities as the thread has them: each with its stored testResults, if any, among its aspects. */
const snapshots =
  (stored: Record<string, unknown>) =>
  (u: string): EntitySnapshot => ({
    urn: u,
    entityType: "dataset",
    aspects: u in stored ? { testResults: stored[u] } : {},
  });

describe("mergeBatch (runTest's push, merged in its thread)", () => {
  const onTypes = JSON.stringify({ [RUN]: ["dataset"], [OTHER]: ["dataset"] });

  it("writes only the entities whose results of the run's test change, keeping other tests' and dropping deleted ones'", () => {
    const stored = {
      // unchanged: the run's result is as stored (the deleted test's entry stays: no write happens)
      [urn(1)]: {
        passing: [
          { test: RUN, type: "SUCCESS" },
          { test: DELETED, type: "SUCCESS" },
        ],
        failing: [],
      },
      // changed: passes now; the other test's entry is kept, the deleted test's dropped with the write
      [urn(2)]: {
        passing: [
          { test: OTHER, type: "SUCCESS" },
          { test: DELETED, type: "SUCCESS" },
        ],
        failing: [{ test: RUN, type: "FAILURE" }],
      },
      // written by anything (the aspect can be ingested): what is not a result is dropped, never fails the push
      [urn(3)]: { passing: ["x", { test: 7 }], failing: "none" },
    };
    const merged = mergeBatch(
      [evaluation(1, "pass"), evaluation(2, "pass"), evaluation(3, "fail"), evaluation(4, "none")],
      snapshots(stored),
      new Set([RUN]),
      { onTypes },
      [definition()],
    );
    expect(merged.writes.urns).toEqual([urn(2), urn(3)]);
    expect(JSON.parse(merged.writes.values[0]!)).toEqual({
      passing: [
        { test: OTHER, type: "SUCCESS" },
        { test: RUN, type: "SUCCESS" },
      ],
      failing: [],
    });
    expect(JSON.parse(merged.writes.values[1]!)).toEqual({
      passing: [],
      failing: [{ test: RUN, type: "FAILURE", failedRules: [] }],
    });
    // The history gets each decided entity's state as stored after the push, the run diff the decided entities.
    expect(merged.results).toEqual({
      urns: [urn(1), urn(2), urn(3)],
      tests: [RUN, RUN, RUN],
      passing: [true, true, false],
    });
    expect(merged.decided).toEqual([urn(1), urn(2), urn(3)]);
    expect(merged.entities).toEqual({ passing: 2, failing: 1, notApplicable: 1 });
    // A test without actions: no evaluations cross back to the main thread.
    expect(merged.evaluations).toBeUndefined();
  });

  it("stores no result of a test that was deleted, or no longer selects the type, while the batch ran", () => {
    const merged = mergeBatch(
      [evaluation(1, "pass")],
      snapshots({}),
      new Set([RUN]),
      { onTypes: JSON.stringify({ [RUN]: ["chart"] }) },
      [definition()],
    );
    expect(merged.writes.urns).toEqual([]);
    expect(merged.results.urns).toEqual([]);
  });

  it("answers the evaluations when the test has actions, for the push to run them", () => {
    const tag = { type: "ADD_TAGS", values: ["urn:li:tag:t"] } as never;
    const merged = mergeBatch([evaluation(1, "pass")], snapshots({}), new Set([RUN]), { onTypes }, [
      definition({ passing: [tag], failing: [] }),
    ]);
    expect(merged.evaluations).toEqual([evaluation(1, "pass")]);
  });
});
