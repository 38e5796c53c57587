/**
 * Policies and groups over real HTTP and PostgreSQL: what grants a privilege, how lists search, how new ids are taken.
 * Who may call what is the authorization matrix's; the effect across replicas is test/e2e/replicas.e2e.spec.ts'.
 */
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

describe("policies and groups", () => {
  let h: Harness;
  const asRoot = systemClientHeaders(ROOT);
  const gql = async (query: string, variables: Record<string, unknown> = {}, headers = asRoot) =>
    (await h.graphql(query, variables, headers)).body;
  const createPolicy = (input: Record<string, unknown>) =>
    gql(`mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }`, { input });
  const privilegesOf = async (user: string) =>
    ((await gql(`{ me { privileges } }`, {}, systemClientHeaders(user))).data?.me as { privileges: string[] })
      .privileges;

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  it("answers NOT_FOUND, not an internal error, to the second of two concurrent deletes or an update racing one", async () => {
    const policy = { name: "raced", state: "INACTIVE", privileges: [], actors: {} };
    for (const second of ["delete", "update"]) {
      const urn = (await createPolicy(policy)).data?.createPolicy as string;
      const del = gql(`mutation($urn: String!) { deletePolicy(urn: $urn) }`, { urn });
      const other =
        second === "delete"
          ? gql(`mutation($urn: String!) { deletePolicy(urn: $urn) }`, { urn })
          : gql(`mutation($urn: String!, $input: PolicyUpdateInput!) { updatePolicy(urn: $urn, input: $input) }`, {
              urn,
              input: { ...policy, name: "renamed" },
            });
      const codes = (await Promise.all([del, other])).map((r) => r.errors?.[0]?.extensions?.code ?? "ok");
      expect(codes.filter((c) => c !== "ok" && c !== "NOT_FOUND")).toEqual([]);
      expect(await h.prisma.policy.findUnique({ where: { urn } })).toBeNull();
    }
  });

  it("grants platform privileges through PLATFORM policies only, as DataHub does", async () => {
    const erin = "urn:li:corpuser:erin";
    const base = { state: "ACTIVE", privileges: ["MANAGE_POLICIES"], actors: { users: [erin] } };
    expect((await createPolicy({ ...base, type: "METADATA", name: "a metadata policy" })).errors).toBeUndefined();
    expect(await privilegesOf(erin)).toEqual([]);
    expect((await createPolicy({ ...base, type: "PLATFORM", name: "a platform policy" })).errors).toBeUndefined();
    expect(await privilegesOf(erin)).toEqual(["MANAGE_POLICIES"]);
  });

  it("searches names for the text given: % and _ are characters, not wildcards", async () => {
    await createPolicy({ name: "100% coverage", state: "INACTIVE", privileges: [], actors: {} });
    await createPolicy({ name: "plain", state: "INACTIVE", privileges: [], actors: {} });
    const policyNames = async (query: string) =>
      (
        (await gql(`query($q: String) { listPolicies(input: {query: $q}) { policies { name } } }`, { q: query })).data
          ?.listPolicies as { policies: Array<{ name: string }> }
      ).policies.map((p) => p.name);
    expect(await policyNames("%")).toEqual(["100% coverage"]);
    expect(await policyNames("_")).toEqual([]);

    await gql(`mutation { createGroup(input: {id: "under_score", name: "under_score"}) }`);
    await gql(`mutation { createGroup(input: {id: "plain", name: "plain group"}) }`);
    const groups = (await gql(`{ listGroups(input: {query: "_"}) { groups { name } } }`)).data?.listGroups as {
      groups: Array<{ name: string }>;
    };
    expect(groups.groups.map((g) => g.name)).toEqual(["under_score"]);
  });

  it("generates a group id when none or a blank one is given, and names an id it cannot use", async () => {
    const blank = await gql(`mutation { createGroup(input: {id: "   ", name: "blank id"}) }`);
    expect(blank.data?.createGroup).toMatch(/^urn:li:corpGroup:[0-9a-f-]{36}$/);
    const unusable = await gql(`mutation { createGroup(input: {id: "a)b", name: "bad id"}) }`);
    expect(unusable.errors?.[0]?.message).toBe("Invalid id in 'input.id': 'a)b' (unbalanced parentheses in id)");
    const generated = await gql(`mutation { createGroup(input: {name: "no id"}) }`);
    expect(generated.data?.createGroup).toMatch(/^urn:li:corpGroup:[0-9a-f-]{36}$/);
  });

  it("counts a policy name's length in characters: 256 emoji fit", async () => {
    const res = await createPolicy({ name: "😀".repeat(256), state: "INACTIVE", privileges: [], actors: {} });
    expect(res.errors).toBeUndefined();
  });
});
