/**
 * parseTestDefinition reading JSON and YAML into one normalized definition (its refusals:
 * definition.parser.refusals.spec.ts).
 */
import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import { PREFIX, refusal, onDatasets, rulesWith } from "./definition.parser.testing";

describe("parseTestDefinition: reading JSON and YAML", () => {
  const yaml = `
on:
  types: [dataset]
  conditions:
    - property: platform
      operator: equals
      value: urn:li:dataPlatform:hive
rules:
  or:
    - property: ownership.owners.owner
      operator: exists
    - not:
        property: globalTags.tags.tag
        operator: contains_any
        values: [urn:li:tag:pii]
actions:
  failing:
    - type: ADD_TAGS
      values: [urn:li:tag:needs-owner]
`;
  const json = JSON.stringify({
    on: {
      types: ["dataset"],
      conditions: [{ property: "platform", operator: "equals", value: "urn:li:dataPlatform:hive" }],
    },
    rules: {
      or: [
        { property: "ownership.owners.owner", operator: "exists" },
        { not: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii"] } },
      ],
    },
    actions: { failing: [{ type: "ADD_TAGS", values: ["urn:li:tag:needs-owner"] }] },
  });

  it("reads YAML and JSON into the same normalized definition", () => {
    const expected = {
      on: {
        types: ["dataset"],
        conditions: { and: [{ property: "platform", operator: "equals", values: ["urn:li:dataPlatform:hive"] }] },
      },
      rules: {
        or: [
          { property: "ownership.owners.owner", operator: "exists" },
          { not: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii"] } },
        ],
      },
      actions: { passing: [], failing: [{ type: "ADD_TAGS", params: { values: ["urn:li:tag:needs-owner"] } }] },
    };
    expect(parseTestDefinition(yaml)).toEqual(expected);
    expect(parseTestDefinition(json)).toEqual(expected);
  });

  it("reads YAML flow style, and keeps YAML's `on` a key rather than the YAML 1.1 boolean", () => {
    const parsed = parseTestDefinition("{on: {types: [dataset]}, rules: [{property: urn, operator: exists}]}");
    expect(parsed.on.types).toEqual(["dataset"]);
  });

  it("produces plain JSON that reads back unchanged, as text or as a stored Json column", () => {
    const parsed = parseTestDefinition(yaml);
    const stored: unknown = JSON.parse(JSON.stringify(parsed));
    expect(definitionFromJson(stored)).toEqual(parsed);
    expect(parseTestDefinition(JSON.stringify(parsed))).toEqual(parsed);
  });

  it("refuses text that is neither JSON nor YAML, saying where", () => {
    expect(refusal('{"on": {"types": ["dataset"]},').message).toMatch(
      /^Failed to validate test definition: neither valid JSON \(.+\) nor valid YAML \(.+line 1.+\)$/,
    );
    expect(refusal("on:\n  types: [dataset\nrules: x").message).toMatch(
      /^Failed to validate test definition: not valid YAML: .*line \d+, column \d+/,
    );
  });

  it("refuses empty text and text that is not an object", () => {
    expect(refusal("  \n").message).toBe(`${PREFIX}the definition is empty`);
    expect(refusal("[1, 2]").message).toBe(
      `${PREFIX}the definition must be an object with 'on' and 'rules', got a list`,
    );
    expect(refusal("just words").message).toBe(
      `${PREFIX}the definition must be an object with 'on' and 'rules', got the string "just words"`,
    );
  });
});

describe("parseTestDefinition: normalization", () => {
  it("turns a bare list into and, and keeps a single predicate as is", () => {
    expect(parseTestDefinition(JSON.stringify(rulesWith({ property: "urn", operator: "exists" }))).rules).toEqual({
      and: [{ property: "urn", operator: "exists" }],
    });
    const single = parseTestDefinition(
      JSON.stringify({ on: onDatasets, rules: { property: "urn", operator: "exists" } }),
    );
    expect(single.rules).toEqual({ property: "urn", operator: "exists" });
  });

  it("accepts the legacy names match, query and operation and stores the current ones", () => {
    const parsed = parseTestDefinition(`
on:
  types: [dataset]
  match:
    query: entityType
    operation: equals
    value: dataset
rules:
  query: datasetProperties.description
  operation: exists
`);
    expect(parsed).toEqual({
      on: { types: ["dataset"], conditions: { property: "entityType", operator: "equals", values: ["dataset"] } },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
  });

  it("matches operator names in any case", () => {
    const parsed = parseTestDefinition(
      JSON.stringify(rulesWith({ property: "urn", operator: "STARTS_WITH", value: "urn:li" })),
    );
    expect(parsed.rules).toEqual({ and: [{ property: "urn", operator: "starts_with", values: ["urn:li"] }] });
  });

  it("stores operands as strings: a list for any-of operators, one value for thresholds", () => {
    const parsed = parseTestDefinition(`
on: {types: [dataset]}
rules:
  - {property: datasetProfile.rowCount, operator: greater_than, value: 10}
  - {property: status.removed, operator: equals, value: false}
  - {property: datasetProperties.customProperties.tier, operator: equals, values: [1, gold]}
`);
    expect(parsed.rules).toEqual({
      and: [
        { property: "datasetProfile.rowCount", operator: "greater_than", value: "10" },
        { property: "status.removed", operator: "equals", values: ["false"] },
        { property: "datasetProperties.customProperties.tier", operator: "equals", values: ["1", "gold"] },
      ],
    });
  });

  it("drops duplicate entity types and leaves out actions that were not given", () => {
    const parsed = parseTestDefinition(
      JSON.stringify({
        on: { types: ["dataset", "chart", "dataset"] },
        rules: [{ property: "urn", operator: "exists" }],
      }),
    );
    expect(parsed.on.types).toEqual(["dataset", "chart"]);
    expect(parsed).not.toHaveProperty("actions");
    expect(parsed.on).not.toHaveProperty("conditions");
  });
});
