import { buildSchema, Kind, parse, type OperationDefinitionNode } from "graphql";
import { MAX_COST, operationCost, refuseCostlyOperation } from "./query-cost";
import { typeDefs } from "./schema";

const schema = buildSchema(typeDefs.join("\n"));
const costOf = (query: string, variables: Record<string, unknown> = {}) => {
  const document = parse(query);
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  )!;
  return operationCost(schema, document, operation, variables);
};

describe("query cost of test definitions", () => {
  const page = (count: number, fields: string) =>
    `{ listTests(input: {count: ${count}}) { total tests { urn definition { ${fields} } } } }`;

  it("refuses a page of 1,000 tests with their definitions, which weigh up to 192 KiB each", () => {
    expect(costOf(page(1000, "normalized"))).toBeGreaterThan(MAX_COST);
    expect(costOf(page(1000, "json"))).toBeGreaterThan(MAX_COST);
    expect(costOf(page(160, "json normalized"))).toBeGreaterThan(MAX_COST);
  });

  it("lets a page of 100 through, and a page of 1,000 without definitions", () => {
    expect(costOf(page(100, "json normalized"))).toBeLessThanOrEqual(MAX_COST);
    expect(costOf(page(150, "normalized"))).toBeLessThanOrEqual(MAX_COST);
    expect(costOf(`{ listTests(input: {count: 1000}) { tests { urn name } } }`)).toBeLessThanOrEqual(MAX_COST);
  });

  it("counts definitions wherever they are selected: aliases, fragments, variables", () => {
    const aliases = Array.from({ length: 2 }, (_, i) => `a${i}: listTests(input: $i) { tests { ...D } }`).join(" ");
    const query = `query($i: ListTestsInput) { ${aliases} } fragment D on Test { definition { normalized } }`;
    expect(costOf(query, { i: { count: 70 } })).toBeLessThanOrEqual(MAX_COST);
    expect(costOf(query, { i: { count: 100 } })).toBeGreaterThan(MAX_COST);
  });
});

describe("query cost of a test's results and runs", () => {
  it("charges each test's own statement: a page of 1,000 selecting results or runs is refused, one of 100 is not", () => {
    const page = (count: number, fields: string) =>
      `{ listTests(input: {count: ${count}}) { tests { urn ${fields} } } }`;
    const results = "results { passingCount failingCount }";
    const runs = "batchRunEvents { batchRunEvents { timestampMillis result { passingCount } } }";
    expect(costOf(page(1000, results))).toBeGreaterThan(MAX_COST);
    expect(costOf(page(1000, runs))).toBeGreaterThan(MAX_COST);
    expect(costOf(page(100, results))).toBeLessThanOrEqual(MAX_COST);
    // batchRunEvents' events are a list of its limit.
    expect(
      costOf(
        `{ test(urn: "urn:li:test:t") { batchRunEvents(limit: 100) { batchRunEvents { timestampMillis result { passingCount } } } } }`,
      ),
    ).toBe(1 + 5 + 1 + 2 + 100 * (1 + 1));
  });
});

describe("refusing a costly operation, request after request", () => {
  const operationOf = (query: string) => {
    const document = parse(query);
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    )!;
    return (variables: Record<string, unknown> = {}) =>
      () =>
        refuseCostlyOperation(schema, document, operation, variables);
  };

  it("refuses the same document every time it is sent, and lets a cheap one through every time", () => {
    const costly = operationOf(`{ listTests(input: {count: 1000}) { tests { definition { normalized } } } }`);
    const cheap = operationOf(`{ listTests(input: {count: 10}) { tests { definition { normalized } } } }`);
    for (let i = 0; i < 3; i++) {
      expect(costly()).toThrow(/^Query costs \d+; the limit is 5000\.$/);
      expect(cheap()).not.toThrow();
    }
  });

  it("costs an operation with variables with each request's own", () => {
    const page = operationOf(
      `query($n: Int) { listTests(input: {count: $n}) { tests { definition { normalized } } } }`,
    );
    expect(page({ n: 10 })).not.toThrow();
    expect(page({ n: 1000 })).toThrow(/^Query costs/);
    expect(page({ n: 10 })).not.toThrow();
  });
});
