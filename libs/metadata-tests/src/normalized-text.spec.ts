import { definitionFromJson, parseTestDefinition } from "./definition.parser";
import { normalizedDefinitionText } from "./normalized-text";

/** Keys in reverse order at every level, as a jsonb column may give them back. */
const reordered = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reordered(v)]),
  );
};

describe("normalizedDefinitionText", () => {
  it.each([
    "on: {types: [dataset], conditions: {property: platform, operator: equals, value: hive}}\nrules:\n  - {property: ownership.owners.owner, operator: exists}\n  - not: {or: [{property: globalTags.tags.tag, operator: regex_match, values: ['^urn:li:tag:pii']}]}",
    '{"on": {"types": ["chart"]}, "rules": {"property": "chartInfo.title", "operator": "greater_than", "value": 3}, "actions": {"passing": [{"type": "add_owners", "ownerType": "DATA_STEWARD", "values": ["urn:li:corpuser:ok"]}], "failing": [{"type": "deprecate"}]}}',
  ])("writes a stored definition as the parser normalizes it, whatever order its keys come back in: %#", (text) => {
    const parsed = parseTestDefinition(text);
    const stored = reordered(JSON.parse(JSON.stringify(parsed))) as typeof parsed;
    expect(normalizedDefinitionText(stored)).toBe(JSON.stringify(definitionFromJson(stored)));
    expect(normalizedDefinitionText(stored)).toBe(JSON.stringify(parsed));
  });
});
