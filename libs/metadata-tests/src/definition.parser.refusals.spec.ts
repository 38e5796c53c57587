/**
 * parseTestDefinition refusing invalid definitions, saying what and where.
 */
import { AppError } from "@mdp/core";
import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import { TestDefinitionError } from "./test-definition.error";
import { PREFIX, refusalOf, onDatasets, rulesWith } from "./definition.parser.testing";

describe("parseTestDefinition: refusing invalid definitions, saying what and where", () => {
  it("throws a BAD_USER_INPUT error listing each problem with its path", () => {
    const error = refusalOf({
      on: { types: [] },
      rules: [{ property: "urn", operator: "equal", value: "x" }],
      extra: 1,
    });
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe("BAD_USER_INPUT");
    expect(error.problems.map((problem) => problem.path)).toEqual(["extra", "on.types", "rules[0].operator"]);
    expect(error.message.startsWith(PREFIX)).toBe(true);
    expect(error.details).toEqual({ problems: error.problems });
  });

  it("names an unknown operator and lists the valid ones", () => {
    const error = refusalOf({
      on: onDatasets,
      rules: {
        and: [
          { property: "urn", operator: "exists" },
          { property: "urn", operator: "equal", value: "x" },
        ],
      },
    });
    expect(error.message).toBe(
      `${PREFIX}rules.and[1].operator: unknown operator 'equal' (valid operators: equals, starts_with, contains_str, ` +
        "contains_any, regex_match, greater_than, less_than, exists, is_true, is_false)",
    );
  });

  it("points at the legacy key the user wrote", () => {
    expect(refusalOf(rulesWith({ query: "urn", operation: "is" })).message).toContain(
      "rules[0].operation: unknown operator 'is'",
    );
  });

  it("reports paths deep inside conditions and nested combinators", () => {
    const error = refusalOf({
      on: { types: ["dataset"], conditions: { or: [{ not: { property: "urn", operator: "nope" } }] } },
      rules: [{ property: "urn", operator: "exists" }],
    });
    expect(error.problems).toEqual([
      { path: "on.conditions.or[0].not.operator", message: expect.stringContaining("unknown operator 'nope'") },
    ]);
  });

  it.each([
    ["a missing 'on'", { rules: [{ property: "urn", operator: "exists" }] }, "on: missing: say which entity types"],
    ["a missing 'rules'", { on: onDatasets }, "rules: missing: say what an entity must satisfy"],
    [
      "empty on.types",
      { on: { types: [] }, rules: { property: "urn", operator: "exists" } },
      "on.types: must list at least one entity type",
    ],
    [
      "on.types given as a string",
      { on: { types: "dataset" }, rules: { property: "urn", operator: "exists" } },
      'on.types: must be a list of entity types, got the string "dataset"',
    ],
    [
      "a blank entity type",
      { on: { types: ["dataset", " "] }, rules: { property: "urn", operator: "exists" } },
      "on.types[1]: must be an entity type name",
    ],
    [
      "an unknown key in on",
      { on: { types: ["dataset"], condition: [] }, rules: { property: "urn", operator: "exists" } },
      "on.condition: unknown key (expected types, conditions, match)",
    ],
    [
      "conditions and match together",
      { on: { types: ["dataset"], conditions: [], match: [] }, rules: { property: "urn", operator: "exists" } },
      "on: both 'conditions' and its legacy alias 'match' are given",
    ],
    [
      "an unknown top-level key",
      { on: onDatasets, rule: [], rules: { property: "urn", operator: "exists" } },
      "rule: unknown key (expected on, rules, actions)",
    ],
  ])("refuses %s", (_case, definition, expected) => {
    expect(refusalOf(definition).message).toContain(expected);
  });

  it.each([
    ["a missing property", { operator: "exists" }, "rules[0]: missing 'property'"],
    ["an empty property", { property: " ", operator: "exists" }, "rules[0].property: must be a non-empty string"],
    [
      "an empty path segment",
      { property: "ownership..owner", operator: "exists" },
      "rules[0].property: 'ownership..owner' has an empty path segment",
    ],
    ["a missing operator", { property: "urn" }, "rules[0]: missing 'operator'"],
    [
      "property and query together",
      { property: "urn", query: "urn", operator: "exists" },
      "rules[0]: both 'property' and its legacy alias 'query' are given",
    ],
    ["an unknown key in a predicate", { property: "urn", operator: "exists", vale: 1 }, "rules[0].vale: unknown key"],
    [
      "equals without a value",
      { property: "urn", operator: "equals" },
      "rules[0]: missing 'value' (or 'values' for any of a list): 'equals' needs something to compare against",
    ],
    [
      "a value for exists",
      { property: "urn", operator: "exists", value: false },
      "rules[0].value: 'exists' takes no value (to require absence, wrap it: {not: {property, operator: exists}})",
    ],
    [
      "values for is_true",
      { property: "urn", operator: "is_true", values: ["x"] },
      "rules[0].values: 'is_true' takes no value",
    ],
    [
      "values for greater_than",
      { property: "x.y", operator: "greater_than", values: [1, 2] },
      "rules[0].values: 'greater_than' compares against a single number: write 'value', not 'values'",
    ],
    [
      "greater_than without a value",
      { property: "x.y", operator: "greater_than" },
      "rules[0]: missing 'value': 'greater_than' needs a number",
    ],
    [
      "a non-numeric threshold",
      { property: "x.y", operator: "less_than", value: "ten" },
      "rules[0].value: 'less_than' needs a number, got \"ten\"",
    ],
    [
      "a single value for contains_any",
      { property: "x.y", operator: "contains_any", value: "a" },
      "rules[0].value: 'contains_any' takes a list: write 'values: [...]'",
    ],
    [
      "both value and values",
      { property: "urn", operator: "equals", value: "a", values: ["b"] },
      "rules[0]: give either 'value' or 'values' (any of a list), not both",
    ],
    [
      "a list in value",
      { property: "urn", operator: "equals", value: ["a", "b"] },
      "rules[0].value: must be a string, number or boolean, got a list (use 'values' for a list)",
    ],
    [
      "a string in values",
      { property: "urn", operator: "equals", values: "a" },
      "rules[0].values: must be a list, got the string \"a\" (use 'value' for a single one)",
    ],
    [
      "contains_any without values",
      { property: "urn", operator: "contains_any" },
      "rules[0]: missing 'values': 'contains_any' needs a list to compare against",
    ],
    [
      "an empty values list",
      { property: "urn", operator: "contains_any", values: [] },
      "rules[0].values: must list at least one value",
    ],
    [
      "a null value",
      { property: "urn", operator: "equals", value: null },
      "rules[0].value: must be a string, number or boolean, got null",
    ],
    [
      "an object among values",
      { property: "urn", operator: "equals", values: ["a", { b: 1 }] },
      "rules[0].values[1]: must be a string, number or boolean, got an object",
    ],
  ])("refuses %s", (_case, leaf, expected) => {
    expect(refusalOf(rulesWith(leaf)).message).toContain(expected);
  });

  it("refuses an invalid regular expression when the test is saved, not when it runs", () => {
    expect(refusalOf(rulesWith({ property: "urn", operator: "regex_match", value: "(unclosed" })).message).toBe(
      `${PREFIX}rules[0].value: invalid regular expression "(unclosed": missing ): (unclosed`,
    );
    expect(
      refusalOf(rulesWith({ property: "urn", operator: "regex_match", values: ["^ok$", "[z-a]"] })).problems,
    ).toEqual([{ path: "rules[0].values[1]", message: expect.stringContaining('invalid regular expression "[z-a]"') }]);
  });

  it.each([
    ["an empty and", { and: [] }, "rules.and: must list at least one predicate"],
    ["an empty bare list", [], "rules: must list at least one predicate"],
    [
      "or given an object",
      { or: { property: "urn", operator: "exists" } },
      "rules.or: must be a list of predicates, got an object",
    ],
    ["and and or in one object", { and: [], or: [] }, "rules: 'and', 'or' cannot share one object, nest them instead"],
    [
      "a key beside a combinator",
      { not: { property: "urn", operator: "exists" }, property: "urn" },
      "rules: unexpected 'property' beside 'not'",
    ],
    [
      "a predicate that is a string",
      { and: ["urn exists"] },
      'rules.and[0]: expected a predicate ({and: [...]}, {or: [...]}, {not: ...}, {property, operator, value} or a list (meaning and)), got the string "urn exists"',
    ],
    [
      "a misspelled combinator",
      { AND: [] },
      "rules: expected {and: [...]}, {or: [...]}, {not: ...}, {property, operator, value} or a list (meaning and); found keys 'AND'",
    ],
  ])("refuses %s", (_case, rules, expected) => {
    expect(refusalOf({ on: onDatasets, rules }).message).toContain(expected);
  });

  it.each([
    [
      "actions that are not an object",
      [],
      "actions: must be an object with 'passing' and/or 'failing' lists, got a list",
    ],
    ["an unknown actions key", { onFail: [] }, "actions.onFail: unknown key (expected passing, failing)"],
    [
      "an action without a type",
      { failing: [{ values: ["urn:li:tag:x"] }] },
      "actions.failing[0].type: must be a non-empty string",
    ],
    [
      "a non-string action value",
      { passing: [{ type: "ADD_TAGS", values: ["urn:li:tag:x", 3] }] },
      "actions.passing[0].values[1]: must be a string, got number 3",
    ],
    [
      "an unknown action type, listing the valid ones",
      { failing: [{ type: "ADD_TAG", values: ["urn:li:tag:x"] }] },
      "actions.failing[0].type: unknown action type 'ADD_TAG' (valid: ADD_TAGS, REMOVE_TAGS, ADD_GLOSSARY_TERMS, REMOVE_GLOSSARY_TERMS, ADD_OWNERS, REMOVE_OWNERS, SET_DOMAIN, UNSET_DOMAIN, DEPRECATE, UN_DEPRECATE)",
    ],
    [
      "a urn of the wrong entity type",
      { passing: [{ type: "ADD_GLOSSARY_TERMS", params: { values: ["urn:li:tag:x"] } }] },
      "actions.passing[0].params.values[0]: 'urn:li:tag:x' is not a glossaryTerm urn",
    ],
    [
      "a malformed urn",
      { passing: [{ type: "add_owners", values: "ann" }] },
      "actions.passing[0].values: invalid urn 'ann' (must start with 'urn:')",
    ],
    [
      "a missing required parameter",
      { failing: [{ type: "REMOVE_TAGS" }] },
      "actions.failing[0].values: missing: REMOVE_TAGS needs 'values' (a list of tag urns)",
    ],
    [
      "an unknown parameter",
      { failing: [{ type: "UNSET_DOMAIN", params: { values: ["urn:li:domain:x"] } }] },
      "actions.failing[0].params.values: unknown parameter of UNSET_DOMAIN (it takes none)",
    ],
    [
      "two domains for SET_DOMAIN",
      { failing: [{ type: "SET_DOMAIN", values: ["urn:li:domain:a", "urn:li:domain:b"] }] },
      "actions.failing[0].values: 2 values, more than the limit of 1 for this parameter of SET_DOMAIN",
    ],
    [
      "an ownership type DataHub does not have",
      { passing: [{ type: "ADD_OWNERS", values: ["urn:li:corpuser:a"], ownerType: "BOSS" }] },
      "actions.passing[0].ownerType: 'BOSS' is not one of TECHNICAL_OWNER, BUSINESS_OWNER",
    ],
    [
      "params both beside the type and in params",
      { passing: [{ type: "ADD_TAGS", params: { values: ["urn:li:tag:x"] }, values: ["urn:li:tag:y"] }] },
      "actions.passing[0].values: unknown key (expected type, params)",
    ],
    [
      "more values than an action may hold",
      { passing: [{ type: "ADD_TAGS", values: Array.from({ length: 101 }, (_, i) => `urn:li:tag:t${i}`) }] },
      "actions.passing[0].values: 101 values, more than the limit of 100 for this parameter of ADD_TAGS",
    ],
    [
      "more actions than a definition may hold",
      {
        passing: Array.from({ length: 30 }, () => ({ type: "UNSET_DOMAIN" })),
        failing: Array.from({ length: 21 }, () => ({ type: "UN_DEPRECATE" })),
      },
      "actions: 51 actions, more than the limit of 50",
    ],
  ])("refuses %s", (_case, actions, expected) => {
    expect(refusalOf({ on: onDatasets, rules: [{ property: "urn", operator: "exists" }], actions }).message).toContain(
      expected,
    );
  });

  it("normalizes actions to DataHub's {type, params} with canonical names, whichever way they were written", () => {
    const parsed = parseTestDefinition(
      JSON.stringify({
        on: onDatasets,
        rules: [{ property: "urn", operator: "exists" }],
        actions: {
          passing: [
            { type: "undeprecate" },
            { type: "add_owners", ownerType: "DATA_STEWARD", values: "urn:li:corpGroup:stewards" },
          ],
          failing: [
            { type: "Set_Domain", params: { values: "urn:li:domain:finance" } },
            { type: "DEPRECATE", note: "no owner" },
            { type: "ADD_TAGS", values: ["urn:li:tag:a", "urn:li:tag:a", "urn:li:tag:b"] },
          ],
        },
      }),
    );
    expect(parsed.actions).toEqual({
      passing: [
        { type: "UN_DEPRECATE", params: {} },
        { type: "ADD_OWNERS", params: { values: ["urn:li:corpGroup:stewards"], ownerType: ["DATA_STEWARD"] } },
      ],
      failing: [
        { type: "SET_DOMAIN", params: { values: ["urn:li:domain:finance"] } },
        { type: "DEPRECATE", params: { note: ["no owner"] } },
        { type: "ADD_TAGS", params: { values: ["urn:li:tag:a", "urn:li:tag:b"] } },
      ],
    });
    expect(Object.keys(parsed.actions!.passing[1]!.params)).toEqual(["values", "ownerType"]);
    expect(definitionFromJson(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
  });

  it("re-checks stored JSON instead of trusting it", () => {
    expect(() =>
      definitionFromJson({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "bogus" } }),
    ).toThrow("Failed to validate test definition: rules.operator: unknown operator 'bogus'");
    expect(() => definitionFromJson(null)).toThrow(TestDefinitionError);
  });
});
