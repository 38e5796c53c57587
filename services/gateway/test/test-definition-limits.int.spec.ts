/**
 * The limits on a test definition as a client meets them: createTest and updateTest over real HTTP and GraphQL refuse
 * a definition past a limit with BAD_USER_INPUT naming where and the limit, store nothing, and the gateway stays
 * healthy (no stack overflow, no blocked event loop).
 */
import { DEFINITION_LIMITS } from "@mdp/metadata-tests";
import { startGateway, systemClientHeaders, ROOT, type Harness } from "./support/gateway-harness";

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
const PREFIX = "Failed to validate test definition: ";

const leaf = (property: string) => `{"property":"${property}","operator":"exists"}`;
const withRules = (rules: string) => `{"on":{"types":["dataset"]},"rules":${rules}}`;

describe("test definition limits over GraphQL", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startGateway();
  });

  afterAll(async () => {
    await h?.close();
  });

  const create = async (json: string) => {
    const { status, body } = await h.graphql(
      CREATE,
      { input: { name: "limits", category: "x", definition: { json } } },
      systemClientHeaders(ROOT),
    );
    return { status, error: body.errors?.[0] };
  };

  it.each([
    [
      "8,000 nested not",
      withRules(`${'{"not":'.repeat(8000)}${leaf("a")}${"}".repeat(8000)}`),
      // GraphQL errors shorten any run of over 120 characters they echo: the path is cut, the limit still named.
      expect.stringMatching(
        /^Failed to validate test definition: rules(\.not)+.*… nested more than 64 levels deep \(the limit\)$/,
      ),
    ],
    [
      "8,000 nested not in YAML",
      `on: {types: [dataset]}\nrules: ${"{not: ".repeat(8000)}{property: a, operator: exists}${"}".repeat(8000)}`,
      `${PREFIX}nested more than 64 levels deep (the limit)`,
    ],
    [
      "a 1,000-segment property",
      withRules(leaf(Array.from({ length: 1000 }, (_, i) => `s${i}`).join("."))),
      `${PREFIX}rules.property: 1000 dot-separated segments, more than the limit of 32 for a property`,
    ],
    [
      "text over the byte limit",
      withRules(`{"property":"a","operator":"equals","value":"${"x".repeat(DEFINITION_LIMITS.bytes)}"}`),
      `${PREFIX}the definition is 65620 bytes, more than the limit of 65536`,
    ],
    [
      "too many predicates",
      withRules(`[${Array.from({ length: 250 }, () => leaf("a")).join(",")}]`),
      `${PREFIX}251 predicates, more than the limit of 200`,
    ],
    [
      "a backreference",
      withRules('{"property":"urn","operator":"regex_match","values":["^ok$","(a)\\\\1"]}'),
      `${PREFIX}rules.values[1]: invalid regular expression "(a)\\\\1": invalid escape sequence: \\1`,
    ],
    [
      "99 YAML aliases of a 59 KB list (5.7 MB once expanded)",
      `on: {types: [dataset]}\nrules:\n  - {property: urn, operator: contains_any, values: &v [${Array.from({ length: 14 }, (_, i) => `v${i}${"x".repeat(4_200)}`).join(", ")}]}\n${"  - {property: urn, operator: contains_any, values: *v}\n".repeat(99)}`,
      `${PREFIX}the definition expands to more than 131072 characters of keys and values (the limit; a YAML alias counts each time it is used)`,
    ],
    [
      "a regex that takes over a minute to compile",
      withRules('{"property":"urn","operator":"regex_match","value":"(.{1,1000})"}'),
      `${PREFIX}rules.value: a regular expression whose repetitions and character classes expand to about 20027 instructions, more than the limit of 2500 (x{n,m} repeats x m times; ., negated classes and \\p{…} weigh more)`,
    ],
  ])("refuses %s with BAD_USER_INPUT naming it, and stores nothing", async (_case, json, message) => {
    const before = await h.prisma.metadataTest.count();
    const { status, error } = await create(json);
    expect(status).toBeLessThan(500);
    expect(error).toMatchObject({ message, extensions: { code: "BAD_USER_INPUT" } });
    expect(await h.prisma.metadataTest.count()).toBe(before);
  });

  it("applies the same limits to updateTest, and the gateway still answers", async () => {
    const { body } = await h.graphql(
      CREATE,
      { input: { name: "fine", category: "x", definition: { json: withRules(leaf("ownership.owners.owner")) } } },
      systemClientHeaders(ROOT),
    );
    const urn = body.data?.createTest as string;
    const update = await h.graphql(
      UPDATE,
      {
        urn,
        input: {
          name: "fine",
          category: "x",
          definition: { json: withRules('{"property":"urn","operator":"regex_match","value":"a(?=b)"}') },
        },
      },
      systemClientHeaders(ROOT),
    );
    expect(update.body.errors?.[0]).toMatchObject({
      message: `${PREFIX}rules.value: invalid regular expression "a(?=b)": invalid perl operator: (?=`,
      extensions: { code: "BAD_USER_INPUT" },
    });
    expect((await fetch(`${h.baseUrl}/health`)).status).toBe(200);
  });
});
