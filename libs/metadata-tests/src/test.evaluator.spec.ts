import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import type { EntitySnapshot } from "./entity.types";
import { MAX_ACTUAL } from "./failed-rule";
import { appliesToEntityType, entityTypeMatches, evaluateTest, type TestOutcome } from "./test.evaluator";

const hiveTable = (aspects: Record<string, unknown> = {}): EntitySnapshot => ({
  urn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)",
  entityType: "dataset",
  aspects,
});

const described = { datasetProperties: { description: "Orders" } };
const owned = { ownership: { owners: [{ owner: "urn:li:corpuser:ann", type: "DATAOWNER" }] } };
const has = (property: string) => ({ property, operator: "exists" });
const DESCRIPTION = has("datasetProperties.description");
const OWNER = has("ownership.owners.owner");

function passed(outcome: TestOutcome): boolean {
  if (!outcome.applies) throw new Error("the test should apply");
  return outcome.passed;
}

const run = (rules: unknown, aspects: Record<string, unknown>) =>
  evaluateTest(definitionFromJson({ on: { types: ["dataset"] }, rules }), hiveTable(aspects));

describe("which entities a test applies to", () => {
  const definition = parseTestDefinition(`
on:
  types: [dataset, dataJob]
  conditions:
    property: platform
    operator: equals
    value: urn:li:dataPlatform:hive
rules:
  - property: datasetProperties.description
    operator: exists
`);

  it("does not apply to entity types outside on.types", () => {
    expect(evaluateTest(definition, { urn: "urn:li:chart:(looker,1)", entityType: "chart", aspects: {} })).toEqual({
      applies: false,
    });
  });

  it("does not apply when on.conditions do not hold, and applies when they do", () => {
    const kafka: EntitySnapshot = { ...hiveTable(), urn: "urn:li:dataset:(urn:li:dataPlatform:kafka,orders,PROD)" };
    expect(evaluateTest(definition, kafka)).toEqual({ applies: false });
    expect(evaluateTest(definition, hiveTable(described))).toEqual({ applies: true, passed: true, failedRules: [] });
  });

  it("honours the legacy name match for conditions", () => {
    const legacy = parseTestDefinition(
      JSON.stringify({
        on: { types: ["dataset"], match: [{ query: "entityType", operation: "equals", value: "chart" }] },
        rules: [DESCRIPTION],
      }),
    );
    expect(evaluateTest(legacy, hiveTable(described))).toEqual({ applies: false });
  });

  it("matches entity types ignoring case and underscores, so GraphQL's DATA_JOB selects dataJob", () => {
    const graphqlSpelling = definitionFromJson({ on: { types: ["DATASET", "DATA_JOB"] }, rules: [DESCRIPTION] });
    expect(appliesToEntityType(graphqlSpelling, "dataJob")).toBe(true);
    expect(appliesToEntityType(graphqlSpelling, "dataset")).toBe(true);
    expect(appliesToEntityType(graphqlSpelling, "dataFlow")).toBe(false);
    expect(evaluateTest(graphqlSpelling, hiveTable(described))).toMatchObject({ applies: true, passed: true });
  });

  it("matches the same way past the number of type spellings it remembers", () => {
    const spellings = Array.from({ length: 3000 }, (_, i) => `TYPE_${i}`);
    for (const [i, type] of spellings.entries()) expect(entityTypeMatches(type, `type${i}`)).toBe(true);
    for (const [i, type] of spellings.entries()) expect(entityTypeMatches(type, `type${i + 1}`)).toBe(false);
    expect(entityTypeMatches("DATA_JOB", "dataJob")).toBe(true);
  });
});

describe("combinators", () => {
  it("and (and a bare list) needs every predicate", () => {
    for (const rules of [{ and: [DESCRIPTION, OWNER] }, [DESCRIPTION, OWNER]]) {
      expect(passed(run(rules, { ...described, ...owned }))).toBe(true);
      expect(passed(run(rules, described))).toBe(false);
      expect(passed(run(rules, {}))).toBe(false);
    }
  });

  it("or needs one predicate", () => {
    const rules = { or: [DESCRIPTION, OWNER] };
    expect(passed(run(rules, owned))).toBe(true);
    expect(passed(run(rules, described))).toBe(true);
    expect(passed(run(rules, {}))).toBe(false);
  });

  it("not inverts", () => {
    expect(passed(run({ not: DESCRIPTION }, {}))).toBe(true);
    expect(passed(run({ not: DESCRIPTION }, described))).toBe(false);
    expect(passed(run({ not: [DESCRIPTION, OWNER] }, described))).toBe(true);
  });

  it("nest", () => {
    // described, and either owned or not tagged deprecated
    const deprecated = { property: "globalTags.tags.tag", operator: "equals", value: "urn:li:tag:deprecated" };
    const rules = [DESCRIPTION, { or: [OWNER, { not: deprecated }] }];
    const tagged = { globalTags: { tags: [{ tag: "urn:li:tag:deprecated" }] } };
    expect(passed(run(rules, described))).toBe(true);
    expect(passed(run(rules, { ...described, ...tagged }))).toBe(false);
    expect(passed(run(rules, { ...described, ...tagged, ...owned }))).toBe(true);
    expect(passed(run(rules, { ...tagged, ...owned }))).toBe(false);
  });
});

describe("failedRules: which predicates failed, and on what", () => {
  it("names only the failing predicates of an and, with what was expected and what was found", () => {
    const rules = [
      DESCRIPTION,
      { property: "ownership.owners.type", operator: "equals", values: ["TECHNICAL_OWNER", "BUSINESS_OWNER"] },
      OWNER,
    ];
    expect(run(rules, owned)).toEqual({
      applies: true,
      passed: false,
      failedRules: [
        {
          path: "rules.and[0]",
          property: "datasetProperties.description",
          operator: "exists",
          negated: false,
          actual: [],
          actualCount: 0,
          message: "Expected datasetProperties.description to exist, but it has no value",
        },
        {
          path: "rules.and[1]",
          property: "ownership.owners.type",
          operator: "equals",
          negated: false,
          expected: ["TECHNICAL_OWNER", "BUSINESS_OWNER"],
          actual: ["DATAOWNER"],
          actualCount: 1,
          message:
            'Expected ownership.owners.type to equal one of ["TECHNICAL_OWNER", "BUSINESS_OWNER"], found "DATAOWNER"',
        },
      ],
    });
  });

  it("names every alternative of an or that failed", () => {
    const outcome = run({ or: [DESCRIPTION, OWNER] }, {});
    expect(outcome).toMatchObject({ passed: false, failedRules: [{ path: "rules.or[0]" }, { path: "rules.or[1]" }] });
  });

  it("blames the predicate that held inside a not, marked negated, with the offending values", () => {
    const pii = { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii"] };
    const outcome = run([DESCRIPTION, { not: pii }], {
      ...described,
      globalTags: { tags: [{ tag: "urn:li:tag:public" }, { tag: "urn:li:tag:pii" }] },
    });
    expect(outcome).toEqual({
      applies: true,
      passed: false,
      failedRules: [
        {
          path: "rules.and[1].not",
          property: "globalTags.tags.tag",
          operator: "contains_any",
          negated: true,
          expected: ["urn:li:tag:pii"],
          actual: ["urn:li:tag:public", "urn:li:tag:pii"],
          actualCount: 2,
          message:
            'Expected globalTags.tags.tag not to contain any of ["urn:li:tag:pii"], found "urn:li:tag:public", "urn:li:tag:pii"',
        },
      ],
    });
  });

  it("inside not(or), blames only the alternatives that held; inside not(and), all of them", () => {
    const notEither = run({ not: { or: [DESCRIPTION, OWNER] } }, owned);
    expect(notEither).toMatchObject({ failedRules: [{ path: "rules.not.or[1]", negated: true }] });
    expect(notEither.applies && notEither.failedRules).toHaveLength(1);

    const notBoth = run({ not: { and: [DESCRIPTION, OWNER] } }, { ...described, ...owned });
    expect(notBoth).toMatchObject({
      failedRules: [
        { path: "rules.not.and[0]", negated: true },
        { path: "rules.not.and[1]", negated: true },
      ],
    });
  });

  it("a double negation blames the predicate plainly", () => {
    expect(run({ not: { not: DESCRIPTION } }, {})).toMatchObject({
      failedRules: [{ path: "rules.not.not", negated: false }],
    });
  });

  it("shows at most MAX_ACTUAL values found but counts them all", () => {
    const fields = Array.from({ length: 50 }, (_, index) => ({ fieldPath: `c${index}`, nullable: true }));
    const outcome = run(
      { property: "schemaMetadata.fields.nullable", operator: "is_false" },
      { schemaMetadata: { fields } },
    );
    if (!outcome.applies) throw new Error("should apply");
    const [failure] = outcome.failedRules;
    expect(failure?.actual).toHaveLength(MAX_ACTUAL);
    expect(failure?.actualCount).toBe(50);
    expect(failure?.message).toMatch(
      /^Expected schemaMetadata\.fields\.nullable to be false, found true, .* and 30 more$/,
    );
  });

  it("is plain JSON, ready to store in the entity's testResults aspect", () => {
    const outcome = run([DESCRIPTION, { property: "datasetProfile.rowCount", operator: "greater_than", value: 10 }], {
      datasetProfile: { rowCount: "3" },
    });
    expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome);
    expect(outcome).toMatchObject({
      failedRules: [
        {},
        {
          expected: ["10"],
          actual: ["3"],
          message: 'Expected datasetProfile.rowCount to be greater than 10, found "3"',
        },
      ],
    });
  });
});
