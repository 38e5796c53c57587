/**
 * graphql-js and Apollo repeat the client's text in their error messages (an unknown operation, field, argument or
 * input field name; a variable's invalid value). Each value comes back abbreviated, so a request of a few hundred KB
 * cannot make the gateway send it back whole.
 */
import { CREATE_TOKEN, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const HUGE = "a".repeat(200_000);
const LARGE = "b".repeat(90_000); // within the 100 KiB query text limit

describe("client values in GraphQL error messages", () => {
  let h: Harness;
  /** POSTs a GraphQL request body; returns its status, the raw response size and its errors */
  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${h.baseUrl}/api/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(ROOT) },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const parsed = JSON.parse(text) as { errors?: Array<{ message: string; extensions?: { code?: string } }> };
    return { status: res.status, size: text.length, errors: parsed.errors ?? [] };
  };
  /** the response is small, its first error says `says` and shows the value's start cut with "…" */
  const expectAbbreviated = (res: Awaited<ReturnType<typeof post>>, says: string, valueStart: string): void => {
    expect(res.size).toBeLessThan(2_000);
    expect(res.errors[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(res.errors[0]?.message).toContain(says);
    expect(res.errors[0]?.message).toContain(`${valueStart.slice(0, 100)}…`);
    expect(res.errors[0]?.message).not.toContain(valueStart.slice(0, 101));
  };

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  it("a 200 KB unknown operationName", async () => {
    const res = await post({ query: "query A { me { urn } }", operationName: HUGE });
    expect(res.status).toBe(200); // GraphQL's refusal, as application/json: errors[] with 200
    expectAbbreviated(res, "Unknown operation named", HUGE);
  });

  it("a 200 KB invalid variable value, as a string, an object key and a list", async () => {
    const query = `query ($i: ListTestsInput!) { listTests(input: $i) { total } }`;
    const says = 'Variable "$i" got invalid value';
    expectAbbreviated(await post({ query, variables: { i: HUGE } }), says, HUGE);
    expectAbbreviated(await post({ query, variables: { i: { count: HUGE } } }), says, HUGE);
    expectAbbreviated(await post({ query, variables: { i: { [HUGE]: 1 } } }), says, HUGE);
    expectAbbreviated(await post({ query, variables: { i: [HUGE, HUGE, HUGE] } }), says, HUGE);
    const token = await post({ query: CREATE_TOKEN, variables: { input: { type: HUGE } } });
    expectAbbreviated(token, 'Variable "$input" got invalid value', HUGE);
  });

  it("a 90 KB unknown field, argument and type name", async () => {
    expectAbbreviated(await post({ query: `{ ${LARGE} }` }), "Cannot query field", LARGE);
    expectAbbreviated(await post({ query: `{ me(${LARGE}: 1) { urn } }` }), "Unknown argument", LARGE);
    expectAbbreviated(await post({ query: `query ($v: ${LARGE}) { me { urn } }` }), "Unknown type", LARGE);
  });

  it("short values are left whole", async () => {
    const res = await post({ query: "query A { me { urn } }", operationName: "B" });
    expect(res.errors[0]?.message).toBe('Unknown operation named "B".');
  });
});
