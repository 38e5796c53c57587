/**
 * What a GraphQL client learns from the served schema, with introspection on (README): graphql-js' own "Did you mean"
 * suggestions in its errors, and a description on every root field and argument (GraphiQL's docs pane shows them).
 */
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery } from "graphql";
import { INTROSPECTION } from "../src/graphql/query-limits";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

let h: Harness;
beforeAll(async () => {
  h = await startGateway();
});
afterAll(async () => {
  await h?.close();
});

async function graphql(query: string) {
  const res = await fetch(`${h.baseUrl}/api/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...systemClientHeaders(ROOT) },
    body: JSON.stringify({ query }),
  });
  return (await res.json()) as { data?: unknown; errors?: Array<{ message: string }> };
}

it("serves introspection", () => {
  expect(INTROSPECTION).toBe(true);
});

it("answers a misspelled field, argument or type with graphql-js' suggestion, never a hidden one", async () => {
  const messages = async (query: string) => (await graphql(query)).errors?.map((e) => e.message) ?? [];
  expect(await messages("{ mee { urn } }")).toEqual([`Cannot query field "mee" on type "Query". Did you mean "me"?`]);
  expect(await messages(`{ test(urm: "urn:li:test:x") { urn } }`)).toEqual(
    expect.arrayContaining([
      expect.stringContaining(`Unknown argument "urm" on field "Query.test". Did you mean "urn"?`),
    ]),
  );
  expect(await messages("query($i: ListTestInput!) { listTests(input: $i) { total } }")).toEqual(
    expect.arrayContaining([expect.stringMatching(/^Unknown type "ListTestInput"\. Did you mean "ListTestsInput"/)]),
  );
  expect(await messages("{ mee { urn } }")).not.toEqual(
    expect.arrayContaining([expect.stringContaining("[Suggestion hidden]")]),
  );
});

it("describes every root Query and Mutation field and each of their arguments", async () => {
  const answer = await graphql(getIntrospectionQuery({ descriptions: true }));
  const schema = buildClientSchema(answer.data as IntrospectionQuery);
  const undescribed: string[] = [];
  for (const type of [schema.getQueryType()!, schema.getMutationType()!]) {
    for (const field of Object.values(type.getFields())) {
      if (!field.description?.trim()) undescribed.push(`${type.name}.${field.name}`);
      for (const arg of field.args) {
        if (!arg.description?.trim()) undescribed.push(`${type.name}.${field.name}(${arg.name})`);
      }
    }
  }
  expect(undescribed).toEqual([]);
});
