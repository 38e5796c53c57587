import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import { DEFINITION_LIMITS } from "./definition-limits";
import { TestDefinitionError } from "./test-definition.error";

const PREFIX = "Failed to validate test definition: ";

/** The refusal of `text`, failing the test if it is accepted or fails any other way. */
function refusal(text: string): TestDefinitionError {
  try {
    parseTestDefinition(text);
  } catch (error) {
    if (error instanceof TestDefinitionError) return error;
    throw error;
  }
  throw new Error("accepted");
}

const leaf = (property = "ownership.owners.owner") => ({ property, operator: "exists" });
const withRules = (rules: unknown) => JSON.stringify({ on: { types: ["dataset"] }, rules });
const nestedNots = (depth: number) => {
  let predicate: unknown = leaf();
  for (let i = 0; i < depth; i++) predicate = { not: predicate };
  return predicate;
};

describe("definition limits", () => {
  it("refuses text over the byte limit before parsing it, counting UTF-8 bytes", () => {
    const padding = "é".repeat(DEFINITION_LIMITS.bytes / 2); // 2 bytes each: just over the limit with the rest
    const error = refusal(withRules({ ...leaf(), value: padding }));
    expect(error.message).toMatch(new RegExp(`^${PREFIX}the definition is \\d+ bytes, more than the limit of 65536$`));
  });

  it.each([
    // Written out by hand: JSON.stringify itself recurses and overflows on 8,000 levels.
    [
      "JSON",
      (depth: number) =>
        `{"on":{"types":["dataset"]},"rules":${'{"not":'.repeat(depth)}{"property":"a","operator":"exists"}${"}".repeat(depth)}}`,
    ],
    [
      "YAML flow",
      (depth: number) =>
        `on: {types: [dataset]}\nrules: ${"{not: ".repeat(depth)}{property: a, operator: exists}${"}".repeat(depth)}`,
    ],
  ])("refuses 8,000 nested not in %s by the nesting limit, not a stack overflow", (_syntax, text) => {
    const started = performance.now();
    const error = refusal(text(8000));
    expect(error.message).toContain(`nested more than ${DEFINITION_LIMITS.depth} levels deep (the limit)`);
    expect(error.message).not.toMatch(/call stack/i);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("refuses deep YAML block nesting by the limit, whatever the yaml library's own stack allows", () => {
    let yaml = "on: {types: [dataset]}\nrules:\n";
    for (let depth = 0; depth < 200; depth++) yaml += `${" ".repeat(depth + 1)}not:\n`;
    yaml += `${" ".repeat(201)}property: a\n${" ".repeat(201)}operator: exists\n`;
    expect(refusal(yaml).message).toContain(`nested more than ${DEFINITION_LIMITS.depth} levels deep`);
  });

  it("accepts nesting just inside the limit, and evaluates it", () => {
    // root (1) > rules (2) > 61 nots (63) > leaf (64)
    expect(() => parseTestDefinition(withRules(nestedNots(61)))).not.toThrow();
    expect(refusal(withRules(nestedNots(62))).problems[0]?.path).toMatch(/^rules(\.not)+$/);
  });

  it("refuses a stored definition that breaks a limit as cleanly as text (the worker's path)", () => {
    expect(() => definitionFromJson({ on: { types: ["dataset"] }, rules: nestedNots(8000) })).toThrow(
      `nested more than ${DEFINITION_LIMITS.depth} levels deep`,
    );
    const wide = { on: { types: ["dataset"] }, rules: Array.from({ length: 70_000 }, () => 1) };
    expect(() => definitionFromJson(wide)).toThrow(`more than ${DEFINITION_LIMITS.bytes} values`);
  });

  it("refuses more predicates than the limit, counting on.conditions and rules together", () => {
    const rules = Array.from({ length: DEFINITION_LIMITS.predicates }, () => leaf());
    // and + 200 leaves = 201
    expect(refusal(withRules(rules)).message).toBe(`${PREFIX}201 predicates, more than the limit of 200`);
    expect(() => parseTestDefinition(withRules(rules.slice(1)))).not.toThrow();
  });

  it("refuses a property with too many segments or characters, naming where", () => {
    const segments = Array.from({ length: 1000 }, (_, i) => `s${i}`).join(".");
    const started = performance.now();
    expect(refusal(withRules([leaf(segments)])).message).toBe(
      `${PREFIX}rules[0].property: 1000 dot-separated segments, more than the limit of 32 for a property`,
    );
    expect(performance.now() - started).toBeLessThan(100);
    expect(refusal(withRules([leaf(`a.${"b".repeat(600)}`)])).message).toBe(
      `${PREFIX}rules[0].property: 602 characters, more than the limit of 512 for a property`,
    );
    expect(() => parseTestDefinition(withRules([leaf(Array(32).fill("a").join("."))]))).not.toThrow();
  });

  it("refuses too many values, and values too long", () => {
    const values = Array.from({ length: 1001 }, (_, i) => `urn:li:tag:${i}`);
    expect(refusal(withRules([{ property: "globalTags.tags.tag", operator: "contains_any", values }])).message).toBe(
      `${PREFIX}rules[0].values: 1001 values, more than the limit of 1000 for one predicate`,
    );
    const long = "x".repeat(DEFINITION_LIMITS.valueLength + 1);
    expect(refusal(withRules([{ property: "urn", operator: "equals", values: ["a", long] }])).message).toBe(
      `${PREFIX}rules[0].values[1]: 4097 characters, more than the limit of 4096 for a value`,
    );
  });

  it("refuses a regex pattern over the length limit, and more patterns than the limit", () => {
    const pattern = "a".repeat(DEFINITION_LIMITS.patternLength + 1);
    expect(refusal(withRules([{ property: "urn", operator: "regex_match", value: pattern }])).message).toBe(
      `${PREFIX}rules[0].value: a regular expression of 1001 characters, more than the limit of 1000`,
    );
    const many = Array.from({ length: DEFINITION_LIMITS.patterns + 5 }, (_, i) => `^p${i}$`);
    expect(refusal(withRules([{ property: "urn", operator: "regex_match", values: many }])).problems).toEqual([
      { path: "rules[0].values[100]", message: "more than the limit of 100 regex_match patterns in one definition" },
    ]);
  });
});
