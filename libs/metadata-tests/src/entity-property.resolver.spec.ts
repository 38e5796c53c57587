import { definitionFromJson } from "./definition.parser";
import type { EntitySnapshot } from "./entity.types";
import { evaluateTest } from "./test.evaluator";

/** The values a property resolves to, as a failing `equals` reports them. */
function valuesOf(property: string, entity: EntitySnapshot): unknown[] {
  const definition = definitionFromJson({
    on: { types: [entity.entityType] },
    rules: { property, operator: "equals", value: "\u0000never" },
  });
  const outcome = evaluateTest(definition, entity);
  if (!outcome.applies || outcome.passed) throw new Error("expected a failure");
  return outcome.failedRules[0]?.actual ?? [];
}

const dataset = (
  aspects: Record<string, unknown> = {},
  urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
) => ({
  urn,
  entityType: "dataset",
  aspects,
});

describe("property paths", () => {
  it("fan out over lists at every level", () => {
    const aspects = {
      editableSchemaMetadata: {
        editableSchemaFieldInfo: [
          { fieldPath: "email", globalTags: { tags: [{ tag: "urn:li:tag:pii" }, { tag: "urn:li:tag:email" }] } },
          { fieldPath: "id" },
          { fieldPath: "phone", globalTags: { tags: [{ tag: "urn:li:tag:pii" }] } },
        ],
      },
    };
    expect(valuesOf("editableSchemaMetadata.editableSchemaFieldInfo.globalTags.tags.tag", dataset(aspects))).toEqual([
      "urn:li:tag:pii",
      "urn:li:tag:email",
      "urn:li:tag:pii",
    ]);
  });

  it("flatten a list at the end of the path and drop nulls", () => {
    expect(valuesOf("datasetProperties.tags", dataset({ datasetProperties: { tags: ["a", null, "b"] } }))).toEqual([
      "a",
      "b",
    ]);
  });

  it("reach map keys that contain dots", () => {
    const aspects = { datasetProperties: { customProperties: { "spark.app.name": "etl", spark: { other: 1 } } } };
    expect(valuesOf("datasetProperties.customProperties.spark.app.name", dataset(aspects))).toEqual(["etl"]);
    expect(valuesOf("datasetProperties.customProperties.spark.other", dataset(aspects))).toEqual([1]);
  });

  it("never reach JavaScript object internals", () => {
    expect(valuesOf("datasetProperties.constructor", dataset({ datasetProperties: {} }))).toEqual([]);
    expect(valuesOf("toString", dataset())).toEqual([]);
  });

  it("find nothing through a scalar or a missing aspect", () => {
    expect(
      valuesOf("datasetProperties.description.length", dataset({ datasetProperties: { description: "x" } })),
    ).toEqual([]);
    expect(valuesOf("ownership.owners.owner", dataset())).toEqual([]);
  });
});

describe("special properties", () => {
  it("urn and entityType are the entity's own", () => {
    expect(valuesOf("urn", dataset())).toEqual(["urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"]);
    expect(valuesOf("entityType", dataset())).toEqual(["dataset"]);
  });

  it("platform of a dataset comes from its urn, even with a dataPlatformInstance aspect", () => {
    const aspects = { dataPlatformInstance: { platform: "urn:li:dataPlatform:other" } };
    expect(valuesOf("platform", dataset(aspects))).toEqual(["urn:li:dataPlatform:hive"]);
  });

  it("platform comes from dataPlatformInstance for other entities, or a dataset urn without one", () => {
    const instance = { dataPlatformInstance: { platform: "urn:li:dataPlatform:looker" } };
    expect(valuesOf("platform", { urn: "urn:li:chart:(looker,42)", entityType: "chart", aspects: instance })).toEqual([
      "urn:li:dataPlatform:looker",
    ]);
    expect(valuesOf("platform", dataset(instance, "urn:li:dataset:not-a-tuple"))).toEqual([
      "urn:li:dataPlatform:looker",
    ]);
  });

  it("platform is missing when neither the urn nor an aspect says", () => {
    expect(valuesOf("platform", { urn: "urn:li:chart:(looker,42)", entityType: "chart", aspects: {} })).toEqual([]);
  });

  it("platform of each dataset is its own past the number of urns it remembers", () => {
    for (let i = 0; i < 3000; i++) {
      const urn = `urn:li:dataset:(urn:li:dataPlatform:p${i},db.t,PROD)`;
      expect(valuesOf("platform", dataset({}, urn))).toEqual([`urn:li:dataPlatform:p${i}`]);
    }
    const broken = dataset({ dataPlatformInstance: { platform: "urn:li:dataPlatform:x" } }, "urn:li:dataset:nope");
    expect(valuesOf("platform", broken)).toEqual(["urn:li:dataPlatform:x"]);
    expect(valuesOf("platform", broken)).toEqual(["urn:li:dataPlatform:x"]);
  });
});
