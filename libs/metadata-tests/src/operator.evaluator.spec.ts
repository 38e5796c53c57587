import { definitionFromJson } from "./definition.parser";
import type { EntitySnapshot } from "./entity.types";
import { evaluateTest } from "./test.evaluator";

const HIVE_TABLE = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

/** Whether a dataset with these aspects passes a test made of this one predicate. */
function holds(
  predicate: object,
  aspects: Record<string, unknown> = {},
  entity: Partial<EntitySnapshot> = {},
): boolean {
  const definition = definitionFromJson({ on: { types: ["dataset", "chart"] }, rules: predicate });
  const outcome = evaluateTest(definition, { urn: HIVE_TABLE, entityType: "dataset", aspects, ...entity });
  if (!outcome.applies) throw new Error("the test should apply");
  return outcome.passed;
}

const owners = (...types: string[]) => ({
  ownership: { owners: types.map((type, index) => ({ owner: `urn:li:corpuser:u${index}`, type })) },
});
const tags = (...names: string[]) => ({ globalTags: { tags: names.map((name) => ({ tag: `urn:li:tag:${name}` })) } });
const properties = (value: Record<string, unknown>) => ({ datasetProperties: value });

describe("equals", () => {
  const isDataOwner = { property: "ownership.owners.type", operator: "equals", value: "DATAOWNER" };

  it("holds when any fanned-out value equals it, and is case-sensitive", () => {
    expect(holds(isDataOwner, owners("TECHNICAL_OWNER", "DATAOWNER"))).toBe(true);
    expect(holds(isDataOwner, owners("TECHNICAL_OWNER"))).toBe(false);
    expect(holds(isDataOwner, owners("dataowner"))).toBe(false);
  });

  it("with values, holds when the property equals any of them", () => {
    const either = { property: "ownership.owners.type", operator: "equals", values: ["DATAOWNER", "TECHNICAL_OWNER"] };
    expect(holds(either, owners("TECHNICAL_OWNER"))).toBe(true);
    expect(holds(either, owners("BUSINESS_OWNER"))).toBe(false);
  });

  it("compares numerically when both sides are numbers, whichever is written as a string", () => {
    const tierOne = { property: "datasetProperties.customProperties.tier", operator: "equals", value: 1 };
    expect(holds(tierOne, properties({ customProperties: { tier: "1.0" } }))).toBe(true);
    // Numerically means exactly: identifiers beyond a double's 15-17 digits, or past its range, stay apart.
    const id = (value: string) => ({ property: "datasetProperties.customProperties.id", operator: "equals", value });
    expect(holds(id("12345678901234567890"), properties({ customProperties: { id: "12345678901234567891" } }))).toBe(
      false,
    );
    expect(
      holds(id("12345678901234567890"), properties({ customProperties: { id: "1.2345678901234567890e19" } })),
    ).toBe(true);
    expect(holds(id("1e400"), properties({ customProperties: { id: "2e999" } }))).toBe(false);
    expect(holds(tierOne, properties({ customProperties: { tier: 1 } }))).toBe(true);
    expect(holds({ ...tierOne, value: "01" }, properties({ customProperties: { tier: 1 } }))).toBe(true);
    expect(holds(tierOne, properties({ customProperties: { tier: "1st" } }))).toBe(false);
  });

  it("reads booleans as their text", () => {
    expect(
      holds({ property: "status.removed", operator: "equals", value: false }, { status: { removed: false } }),
    ).toBe(true);
    expect(
      holds({ property: "status.removed", operator: "equals", value: "true" }, { status: { removed: false } }),
    ).toBe(false);
  });

  it("is false for a missing property or an object value, so its negation is true", () => {
    expect(holds(isDataOwner, {})).toBe(false);
    expect(holds({ not: isDataOwner }, {})).toBe(true);
    expect(holds({ property: "ownership", operator: "equals", value: "[object Object]" }, owners("DATAOWNER"))).toBe(
      false,
    );
  });
});

describe("starts_with and contains_str", () => {
  it("starts_with holds when any value starts with any operand", () => {
    const hivePrefixes = {
      property: "urn",
      operator: "starts_with",
      values: ["urn:li:dataset:(urn:li:dataPlatform:kafka", "urn:li:dataset:(urn:li:dataPlatform:hive"],
    };
    expect(holds(hivePrefixes)).toBe(true);
    expect(holds({ property: "urn", operator: "starts_with", value: "urn:li:chart" })).toBe(false);
    expect(
      holds(
        { property: "globalTags.tags.tag", operator: "starts_with", value: "urn:li:tag:pii" },
        tags("public", "pii_email"),
      ),
    ).toBe(true);
  });

  it("contains_str finds a substring in any value, case-sensitively", () => {
    const mentionsPii = { property: "datasetProperties.description", operator: "contains_str", value: "PII" };
    expect(holds(mentionsPii, properties({ description: "Holds PII of customers" }))).toBe(true);
    expect(holds(mentionsPii, properties({ description: "holds pii" }))).toBe(false);
    expect(holds({ property: "ownership.owners.owner", operator: "contains_str", value: "u1" }, owners("A", "B"))).toBe(
      true,
    );
  });

  it("reads numbers as text and is false when the property is missing", () => {
    expect(
      holds(
        { property: "datasetProfile.rowCount", operator: "starts_with", value: "12" },
        { datasetProfile: { rowCount: 1234 } },
      ),
    ).toBe(true);
    expect(holds({ property: "datasetProperties.description", operator: "contains_str", value: "" }, {})).toBe(false);
    expect(holds({ property: "datasetProperties.description", operator: "starts_with", value: "x" }, {})).toBe(false);
  });
});

describe("contains_any", () => {
  const sensitive = {
    property: "globalTags.tags.tag",
    operator: "contains_any",
    values: ["urn:li:tag:pii", "urn:li:tag:gdpr"],
  };

  it("on a collection, holds when it has any of the values as an element (not as a substring)", () => {
    expect(holds(sensitive, tags("public", "gdpr"))).toBe(true);
    expect(holds(sensitive, tags("public"))).toBe(false);
    expect(holds(sensitive, tags("pii_hashed"))).toBe(false);
  });

  it("on a single string, holds when it contains any of the values", () => {
    const words = { property: "datasetProperties.description", operator: "contains_any", values: ["email", "phone"] };
    expect(holds(words, properties({ description: "customer emails" }))).toBe(true);
    expect(holds(words, properties({ description: "orders" }))).toBe(false);
  });

  it("is false for a missing property or an empty collection", () => {
    expect(holds(sensitive, {})).toBe(false);
    expect(holds(sensitive, { globalTags: { tags: [] } })).toBe(false);
  });
});

describe("regex_match", () => {
  it("searches each value (anchor with ^ and $ for a whole match)", () => {
    expect(holds({ property: "urn", operator: "regex_match", value: "dataPlatform:(hive|presto)," })).toBe(true);
    expect(holds({ property: "urn", operator: "regex_match", value: "^dataPlatform" })).toBe(false);
    const snake = { property: "datasetProperties.name", operator: "regex_match", value: "^[a-z_]+$" };
    expect(holds(snake, properties({ name: "order_items" }))).toBe(true);
    expect(holds(snake, properties({ name: "OrderItems" }))).toBe(false);
  });

  it("holds when any fanned-out value matches any of the patterns", () => {
    const piiish = { property: "globalTags.tags.tag", operator: "regex_match", values: ["pii$", "^urn:li:tag:gdpr"] };
    expect(holds(piiish, tags("public", "gdpr_art9"))).toBe(true);
    expect(holds(piiish, tags("public"))).toBe(false);
  });

  it("understands Unicode classes and Java-style escapes", () => {
    const letters = { property: "datasetProperties.name", operator: "regex_match", value: "^\\p{L}+$" };
    expect(holds(letters, properties({ name: "Bestellungen" }))).toBe(true);
    expect(holds(letters, properties({ name: "p{L}" }))).toBe(false);
    expect(
      holds(
        { property: "datasetProperties.name", operator: "regex_match", value: "^a\\-b$" },
        properties({ name: "a-b" }),
      ),
    ).toBe(true);
  });

  it("matches numbers as text and is false when the property is missing", () => {
    expect(
      holds(
        { property: "datasetProfile.rowCount", operator: "regex_match", value: "^\\d{3}$" },
        { datasetProfile: { rowCount: 250 } },
      ),
    ).toBe(true);
    expect(holds({ property: "datasetProperties.name", operator: "regex_match", value: ".*" }, {})).toBe(false);
  });
});

describe("greater_than and less_than", () => {
  const big = { property: "datasetProfile.rowCount", operator: "greater_than", value: 1000 };
  const small = { property: "datasetProfile.rowCount", operator: "less_than", value: "1000" };

  it("compare numbers, including numbers written as strings on either side", () => {
    expect(holds(big, { datasetProfile: { rowCount: 1001 } })).toBe(true);
    expect(holds(big, { datasetProfile: { rowCount: "2e3" } })).toBe(true);
    expect(holds(big, { datasetProfile: { rowCount: "999" } })).toBe(false);
    expect(holds(small, { datasetProfile: { rowCount: "999.5" } })).toBe(true);
    expect(holds(small, { datasetProfile: { rowCount: 1000 } })).toBe(false);
    expect(holds(big, { datasetProfile: { rowCount: 1000 } })).toBe(false);
  });

  it("ignore values that are not numbers, and are false when the property is missing", () => {
    expect(holds(big, { datasetProfile: { rowCount: "lots" } })).toBe(false);
    expect(holds(big, { datasetProfile: { rowCount: "0x10000" } })).toBe(false);
    expect(holds(big, { datasetProfile: { rowCount: true } })).toBe(false);
    expect(holds(big, {})).toBe(false);
    expect(holds(small, {})).toBe(false);
  });

  it("compare numbers of any length exactly, beyond what a double holds", () => {
    const beyond = (value: unknown) => ({ property: "datasetProfile.rowCount", operator: "greater_than", value });
    expect(holds(beyond(9007199254740992), { datasetProfile: { rowCount: "9007199254740993" } })).toBe(true);
    expect(holds(beyond("9007199254740993"), { datasetProfile: { rowCount: 9007199254740992 } })).toBe(false);
    expect(holds(beyond("1e400"), { datasetProfile: { rowCount: "2e400" } })).toBe(true);
    expect(holds(beyond("1e400"), { datasetProfile: { rowCount: "1.0e400" } })).toBe(false);
    expect(holds(beyond("1e9007199254740992"), { datasetProfile: { rowCount: "1e9007199254740993" } })).toBe(true);
    expect(holds(beyond("-0.000000000000000000001"), { datasetProfile: { rowCount: "0" } })).toBe(true);
    const under = { property: "datasetProfile.rowCount", operator: "less_than", value: "-1e-400" };
    expect(holds(under, { datasetProfile: { rowCount: "-2e-400" } })).toBe(true);
    expect(holds(under, { datasetProfile: { rowCount: "-0.5e-400" } })).toBe(false);
  });

  it("hold when any fanned-out value compares", () => {
    const wideColumn = { property: "schemaMetadata.fields.length", operator: "greater_than", value: 255 };
    expect(holds(wideColumn, { schemaMetadata: { fields: [{ length: 10 }, { length: "4000" }] } })).toBe(true);
    expect(holds(wideColumn, { schemaMetadata: { fields: [{ length: 10 }, { length: 20 }] } })).toBe(false);
  });
});

describe("exists", () => {
  const described = { property: "datasetProperties.description", operator: "exists" };

  it("holds when at least one non-null value is found", () => {
    expect(holds(described, properties({ description: "Orders" }))).toBe(true);
    expect(holds(described, properties({ description: "" }))).toBe(true);
    expect(holds({ property: "ownership.owners.owner", operator: "exists" }, owners("DATAOWNER"))).toBe(true);
  });

  it("is false for a missing aspect, field, null or empty list; not exists is then true", () => {
    expect(holds(described, {})).toBe(false);
    expect(holds(described, properties({}))).toBe(false);
    expect(holds(described, properties({ description: null }))).toBe(false);
    expect(holds({ property: "ownership.owners", operator: "exists" }, { ownership: { owners: [] } })).toBe(false);
    expect(holds({ not: described }, {})).toBe(true);
    expect(holds({ not: described }, properties({ description: "x" }))).toBe(false);
  });
});

describe("is_true and is_false", () => {
  it("accept booleans and the strings true/false in any case", () => {
    expect(holds({ property: "status.removed", operator: "is_true" }, { status: { removed: true } })).toBe(true);
    expect(holds({ property: "status.removed", operator: "is_true" }, { status: { removed: "TRUE" } })).toBe(true);
    expect(holds({ property: "status.removed", operator: "is_false" }, { status: { removed: "false" } })).toBe(true);
    expect(holds({ property: "status.removed", operator: "is_true" }, { status: { removed: false } })).toBe(false);
  });

  it("are both false for a missing property or a value that is not a boolean", () => {
    for (const status of [{}, { removed: null }, { removed: "yes" }, { removed: 1 }]) {
      expect(holds({ property: "status.removed", operator: "is_true" }, { status })).toBe(false);
      expect(holds({ property: "status.removed", operator: "is_false" }, { status })).toBe(false);
    }
  });

  it("hold when any fanned-out value is true (or false)", () => {
    const fields = { schemaMetadata: { fields: [{ nullable: false }, { nullable: true }] } };
    expect(holds({ property: "schemaMetadata.fields.nullable", operator: "is_true" }, fields)).toBe(true);
    expect(holds({ property: "schemaMetadata.fields.nullable", operator: "is_false" }, fields)).toBe(true);
  });
});
