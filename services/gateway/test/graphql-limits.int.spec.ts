/** GraphQL request limits (docs/limits.md): each refused with a 400 naming it, the gateway responsive. */
import { getIntrospectionQuery } from "graphql";
import { MAX_DOCUMENT_BYTES, MAX_NESTING, MAX_TOKENS } from "../src/graphql/document-limits";
import { MAX_COST } from "../src/graphql/query-cost";
import { MAX_ALIASES, MAX_DEPTH, MAX_DIRECTIVES } from "../src/graphql/query-limits";
import { CREATE_TOKEN, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const root = systemClientHeaders(ROOT);
let h: Harness;
beforeAll(async () => {
  h = await startGateway();
});
afterAll(async () => {
  await h?.close();
});

/** POSTs a raw JSON body text to GraphQL. */
async function post(body: string) {
  const res = await fetch(`${h.baseUrl}/api/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...root },
    body,
  });
  return {
    status: res.status,
    body: (await res.json()) as {
      data?: unknown;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    },
  };
}
const query = (text: string, variables: Record<string, unknown> = {}) =>
  post(JSON.stringify({ query: text, variables }));

/**
 * `status`: 400 for a refusal before GraphQL sees the request (its bytes, its nesting), 200 for one GraphQL answers
 * (parse, validation, cost): application/json answers those with 200 and errors[] (GraphQL over HTTP; DataHub's
 * clients read nothing else).
 */
function expectRefused(res: Awaited<ReturnType<typeof post>>, message: RegExp, status = 400) {
  expect(res.status).toBe(status);
  expect(res.body.data).toBeUndefined();
  expect(res.body.errors!.length).toBeGreaterThan(0);
  for (const error of res.body.errors!) expect(error.extensions?.code).toBe("BAD_USER_INPUT");
  expect(res.body.errors!.map((e) => e.message).filter((m) => message.test(m))).toHaveLength(1);
  expect(JSON.stringify(res.body)).not.toMatch(/stack|RangeError|Maximum call stack/);
}

describe("GraphQL document limits", () => {
  it("answers a document of 50,000 × @include (~900 KB) at once, /health answering meanwhile", async () => {
    const document = `{ me ${"@include(if: true) ".repeat(50_000)} { urn } }`;
    const started = Date.now();
    const [res, health] = await Promise.all([query(document), fetch(`${h.baseUrl}/health`)]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(health.status).toBe(200);
    expectRefused(res, new RegExp(`${MAX_DOCUMENT_BYTES}`));
  });

  it("refuses a document over the token limit, within the byte limit, in one parse", async () => {
    const document = `{ me ${"@include(if: true) ".repeat(2000)} { urn } }`;
    const started = Date.now();
    expectRefused(await query(document), new RegExp(`more that ${MAX_TOKENS} tokens`), 200);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("refuses more directives, aliases or depth than allowed, naming the limit", async () => {
    expectRefused(
      await query(`{ me ${"@include(if: true) ".repeat(MAX_DIRECTIVES + 1)} { urn } }`),
      new RegExp(`Directives limit of ${MAX_DIRECTIVES} exceeded, found ${MAX_DIRECTIVES + 1}`),
      200,
    );
    const aliases = Array.from({ length: MAX_ALIASES + 1 }, (_, i) => `a${i}: me { urn }`).join(" ");
    expectRefused(await query(`{ ${aliases} }`), new RegExp(`Aliases limit of ${MAX_ALIASES} exceeded`), 200);
    const deep = `{ listTests(input: {}) { tests ${"{ definition ".repeat(MAX_DEPTH)}{ json }${" }".repeat(MAX_DEPTH)} } }`;
    expectRefused(await query(deep), new RegExp(`depth limit of ${MAX_DEPTH} exceeded`), 200);
  });

  it("refuses very deep documents with a 400 naming the nesting limit, never a stack overflow", async () => {
    for (const deep of [
      `{ ${"me { ".repeat(5000)} urn ${"} ".repeat(5000)} }`,
      `{ listAccessTokens(input: {filters: ${"[".repeat(20_000)}${"]".repeat(20_000)}}) { total } }`,
      `query($x: String = ${"{a: ".repeat(3000)}1${"}".repeat(3000)}) { me { urn } }`,
      `{ ${"{".repeat(100_000)} }`,
    ]) {
      expectRefused(await query(deep), new RegExp(`limit is ${MAX_NESTING}`));
    }
    // Brackets inside strings and comments are not nesting.
    const res = await query(`# ${"{".repeat(100)}\n{ me { urn } }`, {});
    expect(res.body.errors).toBeUndefined();
  });

  it("refuses deep JSON nesting in variables without a 500", async () => {
    const res = await post(
      `{"query":"query($f: [FacetFilterInput!]) { listAccessTokens(input: {filters: $f}) { total } }","variables":{"f":${"[".repeat(5000)}${"]".repeat(5000)}}}`,
    );
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toMatch(/Maximum call stack|Internal server error/);
  });

  it("keeps validation linear: repeated fields are refused before graphql-js compares them pairwise", async () => {
    const started = Date.now();
    expectRefused(
      await query(`{ ${"me { urn } ".repeat(490)} }`),
      /one field 490 times in one selection; the limit is 20/,
      200,
    );
    expect(Date.now() - started).toBeLessThan(200);
  });

  it("passes introspection (GraphiQL, Apollo Sandbox) and the project's own documents", async () => {
    for (const text of [
      getIntrospectionQuery(),
      getIntrospectionQuery({
        descriptions: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      }),
    ]) {
      const res = await query(text);
      expect(res.body.errors).toBeUndefined();
      expect(res.status).toBe(200);
    }
    const created = await query(CREATE_TOKEN, {
      input: { type: "PERSONAL", actorUrn: ROOT, duration: "ONE_HOUR", name: "limits" },
    });
    expect(created.body.errors).toBeUndefined();
    const listed = await query(
      `query($input: ListAccessTokenInput!) { listAccessTokens(input: $input) { total tokens { id name } } }`,
      { input: { count: 1000, filters: [{ field: "actorUrn", value: ROOT }] } },
    );
    expect(listed.body.errors).toBeUndefined();
    expect((listed.body.data as { listAccessTokens: { total: number } }).listAccessTokens.total).toBeGreaterThanOrEqual(
      1,
    );
  });
});

describe("GraphQL cost", () => {
  const page = (alias: string, count: string) =>
    `${alias}: listAccessTokens(input: {count: ${count}}) { total tokens { id } }`;

  it("refuses 300 aliases × listAccessTokens(count: 1000) before any resolver runs", async () => {
    const spy = jest.spyOn(h.services.tokens, "list");
    const aliases = Array.from({ length: 300 }, (_, i) => page(`a${i}`, "1000")).join(" ");
    const res = await query(`{ ${aliases} }`);
    expect(res.status).toBe(200); // GraphQL's refusal, as application/json: errors[] with 200
    expect(res.body.errors![0]!.extensions?.code).toBe("BAD_USER_INPUT");
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it("counts page sizes given in variables, inline or as a whole input, and refuses above the budget", async () => {
    const spy = jest.spyOn(h.services.tokens, "list");
    const viaVariable = await query(
      `query($n: Int) { ${Array.from({ length: 6 }, (_, i) => page(`a${i}`, "$n")).join(" ")} }`,
      { n: 1000 },
    );
    expectRefused(viaVariable, new RegExp(`Query costs 6018; the limit is ${MAX_COST}`), 200);
    expect(viaVariable.body.errors![0]!.extensions?.cost).toEqual({ requested: 6018, limit: MAX_COST });
    const wholeInput = await query(
      `query($i: ListAccessTokenInput!) { ${Array.from({ length: 6 }, (_, i) => `a${i}: listAccessTokens(input: $i) { tokens { id } }`).join(" ")} }`,
      { i: { count: 900 } },
    );
    expectRefused(wholeInput, /Query costs 5418; the limit is 5000/, 200);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
    // The same document with small pages is ordinary.
    const small = await query(
      `query($n: Int) { ${Array.from({ length: 6 }, (_, i) => page(`a${i}`, "$n")).join(" ")} }`,
      { n: 10 },
    );
    expect(small.body.errors).toBeUndefined();
  });
});
