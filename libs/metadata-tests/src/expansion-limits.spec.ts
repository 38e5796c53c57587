import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import { DEFINITION_LIMITS } from "./definition-limits";
import { regexCompileCost } from "./regex-cost";
import { TestDefinitionError } from "./test-definition.error";

const PREFIX = "Failed to validate test definition: ";

function refusal(text: string): TestDefinitionError {
  try {
    parseTestDefinition(text);
  } catch (error) {
    if (error instanceof TestDefinitionError) return error;
    throw error;
  }
  throw new Error("accepted");
}

/** The review's definition: one anchored list of 14 strings of ~4 KB, then 99 predicates aliasing it (63,9xx bytes). */
function aliasBomb(): string {
  const strings = Array.from({ length: 14 }, (_, i) => `${String.fromCharCode(97 + i)}${"x".repeat(4_200)}`);
  let text = `on: {types: [dataset]}\nrules:\n  - {property: urn, operator: contains_any, values: &v [${strings.join(", ")}]}\n`;
  for (let i = 0; i < 99; i++) text += `  - {property: urn, operator: contains_any, values: *v}\n`;
  return text;
}

const regexRule = (values: string[]) =>
  JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "regex_match", values } });

describe("definition limits after YAML aliases are resolved", () => {
  it("refuses the review's alias expansion fast, before building it, and names the limit", () => {
    const text = aliasBomb();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(DEFINITION_LIMITS.bytes);
    const started = performance.now();
    const error = refusal(text);
    expect(performance.now() - started).toBeLessThan(1_000); // the yaml library reading 64 KB is most of it
    expect(error.message).toBe(
      `${PREFIX}the definition expands to more than 131072 characters of keys and values (the limit; a YAML alias counts each time it is used)`,
    );
  });

  it("refuses the same expansion when it reaches the worker as a stored row", () => {
    const list = Array.from({ length: 14 }, () => "x".repeat(4_000));
    const stored = {
      on: { types: ["dataset"] },
      rules: { and: Array.from({ length: 100 }, () => ({ property: "urn", operator: "contains_any", values: list })) },
    };
    expect(() => definitionFromJson(stored)).toThrow("expands to more than 131072 characters");
  });

  it("refuses more operands, or operand characters, in all than the limits, even when each predicate is within its own", () => {
    // Aliases of short values: few characters, many operands.
    const values = Array.from({ length: 1_000 }, (_, i) => `v${i}`);
    let text = `on: {types: [dataset]}\nrules:\n  - {property: urn, operator: contains_any, values: &v [${values.join(", ")}]}\n`;
    for (let i = 0; i < 10; i++) text += `  - {property: urn, operator: contains_any, values: *v}\n`;
    expect(refusal(text).message).toBe(`${PREFIX}11000 operands in all predicates, more than the limit of 10000`);
    const long = Array.from({ length: 20 }, () => "y".repeat(4_000)); // 80,000 characters, 80 KB of JSON
    const stored = { on: { types: ["dataset"] }, rules: { property: "urn", operator: "contains_any", values: long } };
    expect(() => definitionFromJson(stored)).toThrow(
      "80000 characters of operands in all predicates, more than the limit of 65536",
    );
  });

  it("accepts a definition at the limits, whose normalized JSON stays within the byte limit", () => {
    // The most operand text 64 KiB of JSON holds: 15 operands of 4,096 characters.
    const values = Array.from({ length: 15 }, (_, i) => `${i}`.padEnd(DEFINITION_LIMITS.valueLength, "z"));
    const text = JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "equals", values } });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(DEFINITION_LIMITS.bytes);
    const normalized = JSON.stringify(parseTestDefinition(text));
    expect(Buffer.byteLength(normalized)).toBeLessThanOrEqual(DEFINITION_LIMITS.normalizedBytes);
    // Many short operands written as numbers, which normalizing turns into strings: 10,000 in 10 predicates.
    const numbers = Array.from({ length: 1_000 }, (_, i) => i);
    const rules = Array.from({ length: 10 }, () => ({ property: "urn", operator: "equals", values: numbers }));
    const many = parseTestDefinition(JSON.stringify({ on: { types: ["dataset"] }, rules }));
    expect(Buffer.byteLength(JSON.stringify(many))).toBeLessThanOrEqual(DEFINITION_LIMITS.normalizedBytes);
  });
});

describe("regex_match compile cost", () => {
  it.each([
    ["(.{1,1000})|z1", 16_000],
    ["[^a]{1000}", 16_000],
    ["(.{1,1000})", 16_000],
    ["((((a|b|c|d){1,10}){1,10}){1,9})", 7_000],
  ])("refuses %s in milliseconds, naming its size and the limit", (pattern, atLeast) => {
    const started = performance.now();
    const error = refusal(regexRule([pattern]));
    expect(performance.now() - started).toBeLessThan(200); // compiling one would take seconds
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]?.path).toBe("rules.values[0]");
    expect(error.problems[0]?.message).toMatch(
      /^a regular expression whose repetitions and character classes expand to about (\d+) instructions, more than the limit of 2500 /,
    );
    expect(regexCompileCost(pattern)).toBeGreaterThanOrEqual(atLeast);
  });

  it("refuses 100 copies of a slow pattern by the definition's total, compiling none past it", () => {
    const patterns = Array.from({ length: 100 }, (_, i) => `(.{1,100})|z${i}`);
    const started = performance.now();
    const error = refusal(regexRule(patterns));
    // Each is ~2,000 units (~40 ms): two fit the total of 5,000, the third is refused, the rest are not compiled.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error.problems).toEqual([
      {
        path: "rules.values[2]",
        message: expect.stringMatching(
          /^regular expressions expanding to about \d+ instructions together, more than the limit of 5000 for one definition$/,
        ),
      },
    ]);
  });

  it("accepts ordinary patterns, Unicode classes included", () => {
    for (const pattern of [
      "^urn:li:tag:(pii|gdpr)_[a-z0-9_]+$",
      "\\d{4}-\\d{2}-\\d{2}",
      "^\\p{L}+$",
      "(?i)^customer_[a-z]{2,32}$",
      "^[A-Z][a-z]+( [A-Z][a-z]+){0,5}$",
      "\\Q.*\\E{3}",
    ]) {
      expect(regexCompileCost(pattern)).toBeLessThan(DEFINITION_LIMITS.patternCost);
    }
    const ordinary = ["^urn:li:tag:(pii|gdpr)_[a-z0-9_]+$", "\\d{4}-\\d{2}-\\d{2}", "^\\p{L}+$"];
    expect(() => parseTestDefinition(regexRule(ordinary))).not.toThrow();
  });

  it("counts nested and counted repetition, classes and escapes", () => {
    expect(regexCompileCost("a{10}")).toBeGreaterThanOrEqual(regexCompileCost("a") + 9);
    expect(regexCompileCost("(a{10}){10}")).toBeGreaterThanOrEqual(100);
    expect(regexCompileCost("[^a]{10}")).toBeGreaterThan(regexCompileCost("[a]{10}"));
    expect(regexCompileCost("x{3,}")).toBeGreaterThan(regexCompileCost("x{3}"));
    // an unclosed counted repetition is a literal brace, not a repeat
    expect(regexCompileCost("a{1000")).toBeLessThan(100);
    // escaped parentheses and brackets are literals
    expect(regexCompileCost("\\(a\\){1000}")).toBeLessThan(1_100);
  });
});
