import { buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from "graphql";
import { MAX_DEPTH, queryLimits } from "./query-limits";

const schema = buildSchema(`type Node { name: String, child: Node } type Query { root: Node }`);
const errorsOf = (query: string) =>
  validate(schema, parse(query), [...specifiedRules, queryLimits]).map((e) => e.message);
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
    expect(errorsOf(nested(MAX_DEPTH + 1))).toEqual([`Query is nested 13 levels deep; the limit is ${MAX_DEPTH}.`]);
  });

  it("bounds introspection too", () => {
    const ofTypes = `{ __type(name: "Node") { ${"ofType { ".repeat(20)}name${" }".repeat(20)} } }`;
    expect(errorsOf(ofTypes)).toEqual(["Introspection is nested 22 levels deep; the limit is 20."]);
  });

  it("counts fields through fragments", () => {
    const names = Array.from({ length: 1001 }, (_, i) => `n${i}: name`).join(" ");
    expect(errorsOf(`{ root { ...F } } fragment F on Node { ${names} }`)).toEqual([
      "Query selects 1002 fields; the limit is 1000.",
    ]);
  });
});
