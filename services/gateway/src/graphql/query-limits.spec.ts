import { buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from "graphql";
import { armor, MAX_DEPTH, queryLimits } from "./query-limits";

const schema = buildSchema(`type Node { name: String, child: Node } type Query { root: Node }`);
const errorsOf = (query: string) =>
  validate(schema, parse(query), [...specifiedRules, queryLimits, ...armor.validationRules]).map((e) => e.message);
const nested = (levels: number) => `{ root ${"{ child ".repeat(levels - 2)}{ name }${" }".repeat(levels - 2)} }`;

describe("query limits", () => {
  it("lets the standard introspection query through, as GraphiQL and code generators send it", () => {
    expect(errorsOf(getIntrospectionQuery())).toEqual([]);
    const everything = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    });
    expect(errorsOf(everything)).toEqual([]);
  });

  it(`refuses data nested deeper than ${MAX_DEPTH} levels, and accepts ${MAX_DEPTH}`, () => {
    expect(errorsOf(nested(MAX_DEPTH))).toEqual([]);
    expect(errorsOf(nested(MAX_DEPTH + 1))).toEqual([
      `Syntax Error: Query depth limit of ${MAX_DEPTH} exceeded, found 13.`,
    ]);
  });

  it("bounds introspection by __type too", () => {
    const ofTypes = `{ __type(name: "Node") { ${"ofType { ".repeat(20)}name${" }".repeat(20)} } }`;
    expect(errorsOf(ofTypes)).toEqual([`Syntax Error: Query depth limit of ${MAX_DEPTH} exceeded, found 22.`]);
  });

  it("counts fragments that spread others many times over without expanding them again (a few lines, 2^40 fields)", () => {
    // Each fragment spreads the one below it twice: walked spread by spread, this document would take days to check.
    const levels = Array.from({ length: 40 }, (_, i) => `fragment F${i + 1} on Node { ...F${i} ...F${i} }`);
    const document = `{ root { ...F40 } } fragment F0 on Node { name } ${levels.join(" ")}`;
    expect(errorsOf(document)).toEqual([`Query selects ${2 ** 40 + 1} fields; the limit is 1000.`]);
  });

  it("measures depth through fragments, nested in fields", () => {
    const deep = `${"child { ".repeat(10)}name${" }".repeat(10)}`;
    const document = `{ root { ...A } } fragment A on Node { child { ...B ... on Node { name } } } fragment B on Node { ${deep} }`;
    expect(errorsOf(document)).toEqual([`Syntax Error: Query depth limit of ${MAX_DEPTH} exceeded, found 13.`]);
  });

  it("counts fields through fragments", () => {
    const names = Array.from({ length: 1001 }, (_, i) => `n${i}: name`).join(" ");
    expect(errorsOf(`{ root { ...F } } fragment F on Node { ${names} }`)).toEqual([
      "Query selects 1002 fields; the limit is 1000.",
    ]);
  });
});
