import { definitionFromJson } from "./definition.parser";
import { evaluateEntity } from "./entity-evaluation";
import { mergeTestResults, readTestResults, sameJson, testResultsOf, type TestResultsAspect } from "./test-results";

const A = "urn:li:test:a";
const B = "urn:li:test:b";
const C = "urn:li:test:c";
const pass = (test: string) => ({ test, type: "SUCCESS" as const });
const fail = (test: string) => ({ test, type: "FAILURE" as const, failedRules: [] });

describe("evaluateEntity", () => {
  const entity = {
    urn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
    entityType: "dataset",
    aspects: { datasetProperties: { description: "orders" } },
  };
  const test = (urn: string, rules: unknown, types = ["dataset"]) => ({
    urn,
    definition: definitionFromJson({ on: { types }, rules }),
  });

  it("sorts tests into passing, failing (with failedRules) and not applicable", () => {
    const evaluation = evaluateEntity(
      [
        test(A, { property: "datasetProperties.description", operator: "exists" }),
        test(B, { property: "ownership.owners.owner", operator: "exists" }),
        test(C, { property: "urn", operator: "exists" }, ["chart"]),
      ],
      entity,
      42,
    );
    expect(evaluation).toMatchObject({
      urn: entity.urn,
      passing: [{ test: A, type: "SUCCESS" }],
      failing: [{ test: B, type: "FAILURE", failedRules: [{ property: "ownership.owners.owner", path: "rules" }] }],
      notApplicable: [C],
      evaluatedAt: 42,
    });
    expect(testResultsOf(evaluation)).toEqual({
      passing: [{ test: A, type: "SUCCESS" }],
      failing: [{ test: B, type: "FAILURE", failedRules: evaluation.failing[0]!.failedRules }],
    });
  });
});

describe("mergeTestResults", () => {
  const previous: TestResultsAspect = { passing: [pass(A)], failing: [fail(B)] };

  it("keeps results of tests not evaluated and replaces those that were", () => {
    const merged = mergeTestResults(previous, new Set([B, C]), { passing: [pass(B)], failing: [fail(C)] });
    expect(merged).toEqual({ passing: [pass(A), pass(B)], failing: [fail(C)] });
  });

  it("drops the entry of an evaluated test that no longer applies", () => {
    expect(mergeTestResults(previous, new Set([A]), { passing: [], failing: [] })).toEqual({
      passing: [],
      failing: [fail(B)],
    });
  });

  it("drops entries that keep rejects (deleted tests)", () => {
    expect(mergeTestResults(previous, new Set(), { passing: [], failing: [] }, (t) => t !== B)).toEqual({
      passing: [pass(A)],
      failing: [],
    });
  });

  it("orders entries by test urn so equal content compares equal", () => {
    const one = mergeTestResults({ passing: [], failing: [] }, new Set([B, A]), {
      passing: [pass(B), pass(A)],
      failing: [],
    });
    expect(one.passing.map((e) => e.test)).toEqual([A, B]);
  });
});

describe("readTestResults", () => {
  it("reads DataHub's shape and drops malformed entries", () => {
    expect(
      readTestResults({ passing: [pass(A), { nope: 1 }, "x"], failing: [{ test: B, type: "FAILURE" }], extra: 1 }),
    ).toEqual({ passing: [pass(A)], failing: [{ test: B, type: "FAILURE" }] });
    expect(readTestResults(null)).toEqual({ passing: [], failing: [] });
  });

  it("gives an ingested failed rule every field its readers rely on, and drops one that is no object", () => {
    const ingested = {
      failing: [{ test: B, type: "FAILURE", failedRules: [{ path: "rules", message: "custom" }, 7] }],
    };
    expect(readTestResults(ingested).failing[0]!.failedRules).toEqual([
      { path: "rules", property: "", operator: "", negated: false, actual: [], actualCount: 0, message: "custom" },
    ]);
  });
});

describe("sameJson", () => {
  it("ignores key order and undefined keys, not values", () => {
    expect(sameJson({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
  });
});
