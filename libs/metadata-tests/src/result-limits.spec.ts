import { cutValue, failedRule, withoutValues, MAX_ACTUAL } from "./failed-rule";
import { boundedTestResults, RESULT_LIMITS, storedResultsWithoutValues } from "./result-limits";
import type { PropertyPredicate } from "./definition.types";
import type { TestResultsAspect } from "./test-results";

const predicate: PropertyPredicate = {
  property: "datasetProperties.description",
  operator: "contains_str",
  values: ["orders"],
} as PropertyPredicate;

describe("cutValue", () => {
  it("keeps short values as they are and cuts long ones to 200 characters, marked", () => {
    expect(cutValue("short")).toBe("short");
    expect(cutValue(42)).toBe(42);
    expect(cutValue({ a: 1 })).toEqual({ a: 1 });
    const long = "x".repeat(1000);
    expect(cutValue(long)).toBe(`${"x".repeat(200)}… (cut from 1000 characters)`);
    const object = { text: "y".repeat(500) };
    expect(cutValue(object)).toBe(
      `${JSON.stringify(object).slice(0, 200)}… (cut from ${JSON.stringify(object).length} characters)`,
    );
  });

  it("never splits a surrogate pair", () => {
    const text = `${"a".repeat(199)}😀${"b".repeat(100)}`;
    expect(cutValue(text)).toBe(`${"a".repeat(199)}… (cut from ${text.length} characters)`);
  });
});

describe("failedRule and withoutValues", () => {
  it("shows at most MAX_ACTUAL cut values, or none, with the count either way", () => {
    const found = Array.from({ length: 30 }, (_, i) => `${"v".repeat(300)}${i}`);
    const shown = failedRule(predicate, "rules", found, false);
    expect(shown.actual).toHaveLength(MAX_ACTUAL);
    expect(String(shown.actual[0]).length).toBeLessThan(RESULT_LIMITS.valueCharacters + 40);
    expect(shown.message).toContain("and 10 more");
    const hidden = failedRule(predicate, "rules", found, false, false);
    expect(hidden).toEqual({ ...shown, actual: [], message: expect.any(String) });
    expect(hidden.message).toBe(
      'Expected datasetProperties.description to contain "orders", and it has 30 values (not shown: reading them needs GET_ENTITY)',
    );
    expect(withoutValues(shown)).toEqual(hidden);
  });
});

describe("boundedTestResults", () => {
  const rule = (values: number) =>
    failedRule(
      predicate,
      "rules",
      Array.from({ length: values }, () => "z".repeat(300)),
      false,
    );
  const entry = (test: string, rules: number) => ({
    test,
    type: "FAILURE" as const,
    failedRules: Array.from({ length: rules }, () => rule(20)),
  });

  it("leaves an aspect within the limit as it is", () => {
    const aspect: TestResultsAspect = { passing: [], failing: [entry("urn:li:test:a", 2)] };
    expect(boundedTestResults(aspect)).toEqual({ value: aspect, json: JSON.stringify(aspect) });
  });

  it("drops the heaviest entries' values, then their rules, until it fits", () => {
    const aspect: TestResultsAspect = {
      passing: [{ test: "urn:li:test:ok", type: "SUCCESS" }],
      failing: [entry("urn:li:test:a", 40), entry("urn:li:test:b", 60), entry("urn:li:test:c", 1)],
    };
    const { value, json } = boundedTestResults(aspect);
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(RESULT_LIMITS.entityBytes);
    expect(JSON.parse(json)).toEqual(value);
    const [a, b, c] = value.failing;
    expect(b!.failedRules!.every((r) => r.actual.length === 0 && r.actualCount === 20)).toBe(true);
    expect(a!.failedRules![0]!.actual).toHaveLength(20); // the lighter one kept its values once b's were dropped
    expect(c).toEqual(aspect.failing[2]);
    expect(boundedTestResults(aspect)).toEqual({ value, json }); // deterministic: unchanged outcomes write nothing
  });

  it("leaves out failed rules, counting them, when values alone are not enough", () => {
    const failing = Array.from({ length: 30 }, (_, i) => entry(`urn:li:test:${i}`, 100));
    const { json, value } = boundedTestResults({ passing: [], failing });
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(RESULT_LIMITS.entityBytes);
    expect(value.failing.some((e) => e.failedRulesOmitted === 100 && e.failedRules === undefined)).toBe(true);
  });
});

describe("storedResultsWithoutValues", () => {
  it("hides the values of an evaluate task's results and of a testResults aspect, leaving the rest", () => {
    const evaluation = {
      urn: "urn:li:dataset:x",
      passing: [],
      failing: [{ test: "urn:li:test:t", type: "FAILURE", failedRules: [rule()] }],
      notApplicable: [],
      evaluatedAt: 1,
    };
    const hidden = storedResultsWithoutValues({ results: { "urn:li:dataset:x": evaluation } }) as {
      results: Record<string, typeof evaluation>;
    };
    expect(hidden.results["urn:li:dataset:x"]!.failing[0]!.failedRules[0]).toEqual({
      ...rule(),
      actual: [],
      message:
        'Expected datasetProperties.description to contain "orders", and it has 1 value (not shown: reading them needs GET_ENTITY)',
    });
    expect(storedResultsWithoutValues({ refused: { code: "NOT_FOUND" } })).toEqual({ refused: { code: "NOT_FOUND" } });
    expect(storedResultsWithoutValues(null)).toBeNull();
    function rule() {
      return failedRule(predicate, "rules", ["secret"], false);
    }
  });
});
