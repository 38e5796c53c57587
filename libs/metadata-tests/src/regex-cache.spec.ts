import { parseTestDefinition } from "./definition.parser";
import { DEFINITION_LIMITS } from "./definition-limits";
import { regexMatches, regexSyntaxError } from "./regex-cache";
import { TestDefinitionError } from "./test-definition.error";

const withPattern = (value: string) =>
  JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "regex_match", value } });

function refusalMessage(text: string): string {
  try {
    parseTestDefinition(text);
  } catch (error) {
    if (error instanceof TestDefinitionError) return error.message;
    throw error;
  }
  throw new Error("accepted");
}

describe("regex_match runs on RE2", () => {
  it("answers a catastrophic-backtracking pattern in linear time", () => {
    // JavaScript's engine takes seconds on 28 characters of this, and would not end on 10,000; RE2 has no backtracking
    // to explode (a few ms; the bound leaves room for a loaded machine, where 500 ms was once missed by 26).
    const started = performance.now();
    expect(regexMatches("^(a+)+$", `${"a".repeat(10_000)}!`)).toBe(false);
    expect(regexMatches("^(a|a)*$", `${"a".repeat(10_000)}!`)).toBe(false);
    expect(regexMatches("^(\\w+\\s?)*$", `${"word ".repeat(2_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("keeps JavaScript syntax: Unicode classes, escaped punctuation, named groups; and adds inline flags", () => {
    expect(regexMatches("^\\p{L}+$", "Bestellungen")).toBe(true);
    expect(regexMatches("^a\\-b$", "a-b")).toBe(true);
    expect(regexMatches("^(?<db>\\w+)\\.t$", "orders.t")).toBe(true);
    expect(regexMatches("^ORDERS$", "orders")).toBe(false); // case-sensitive, as before
    expect(regexMatches("(?i)^ORDERS$", "orders")).toBe(true);
  });

  it("refuses at save what RE2 cannot run, naming the rule and the reason", () => {
    expect(refusalMessage(withPattern("(cat|dog)\\1"))).toBe(
      'Failed to validate test definition: rules.value: invalid regular expression "(cat|dog)\\\\1": invalid escape sequence: \\1',
    );
    expect(refusalMessage(withPattern("abc(?=def)"))).toContain(
      'rules.value: invalid regular expression "abc(?=def)": invalid perl operator: (?=',
    );
    expect(regexSyntaxError("(?<!a)b")).toBe("invalid perl operator: (?<");
    // RE2's wording, whichever error comes first (re2js reports a duplicate name before a missing parenthesis)
    expect(regexSyntaxError("(unclosed")).toBe("missing ): (unclosed");
    expect(regexSyntaxError("(?<n>a)(?<n>")).toBe("missing ): (?P<n>a)(?P<n>");
    expect(regexSyntaxError("(?<n>a)(?<n>b)")).toBe("Duplicate capture group name");
    expect(regexSyntaxError("a**")).toBe("bad repetition operator: **");
    expect(regexSyntaxError("a{1001}")).toBe("invalid repetition size: {1001}");
    expect(regexSyntaxError("\\")).toBe("trailing \\");
  });

  it("reads JavaScript escapes as RE2 did: \\u, \\u{…}, \\cX and an unescaped slash", () => {
    expect(regexMatches("^\\u00e9\\u{1F600}$", "é\u{1F600}")).toBe(true);
    expect(regexMatches("^\\cA$", "\u0001")).toBe(true);
    expect(regexMatches("^a/b$", "a/b")).toBe(true);
  });

  it("searches only the first regexSubjectLength characters of a value", () => {
    const limit = DEFINITION_LIMITS.regexSubjectLength;
    expect(regexMatches("needle", `${"x".repeat(limit - 6)}needle`)).toBe(true);
    expect(regexMatches("needle", `${"x".repeat(limit)}needle`)).toBe(false);
  });

  it("keeps matching after many more distinct patterns than the cache holds", () => {
    for (let i = 0; i < 2_000; i++) expect(regexMatches(`^urn:li:tag:${i}[a-z]+$`, `urn:li:tag:${i}x`)).toBe(true);
  });
});
