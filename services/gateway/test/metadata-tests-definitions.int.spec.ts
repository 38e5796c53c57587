/**
 * Metadata-test definitions over GraphQL against the real gateway (real PostgreSQL and Redis): created from YAML or
 * JSON (the text as written, the normalized form, the registry's type names), refused with the right codes when
 * invalid or duplicate, updated and deleted with audit rows, listed with paging, behind VIEW_TESTS and MANAGE_TESTS.
 */
import {
  CHART_TITLED,
  CREATE,
  DELETE,
  DESCRIBED_AS_ORDERS,
  HAS_DESCRIPTION,
  HAS_OWNER,
  MANAGER,
  NOBODY,
  UPDATE,
  VIEWER,
  metadataTestsSetup,
} from "./support/metadata-tests";
import { ROOT, type Harness } from "./support/gateway-harness";

describe("metadata tests", () => {
  const { ctx, gql, createTest } = metadataTestsSetup();
  let h: Harness;
  beforeAll(() => {
    h = ctx.h;
  });

  describe("definitions over GraphQL", () => {
    it("creates a test from YAML, keeping the text as written, the normalized form and the registry's type names", async () => {
      expect(await createTest("described", HAS_DESCRIPTION)).toBe("urn:li:test:described");
      expect(await createTest("owned", HAS_OWNER)).toBe("urn:li:test:owned");
      const body = await gql(
        `query($urn: String!) { test(urn: $urn) { urn name category state onTypes definition { json normalized } createdBy } }`,
        { urn: "urn:li:test:owned" },
      );
      expect(body.data?.test).toEqual({
        urn: "urn:li:test:owned",
        name: "test owned",
        category: "Quality",
        state: "ACTIVE",
        onTypes: ["dataset"],
        definition: {
          json: HAS_OWNER,
          normalized: JSON.stringify({
            on: { types: ["DATASET"] },
            rules: {
              and: [
                { property: "ownership.owners.owner", operator: "exists" },
                { property: "ownership.owners.type", operator: "equals", values: ["TECHNICAL_OWNER"] },
              ],
            },
          }),
        },
        createdBy: ROOT,
      });
      const audit = await h.prisma.auditEvent.findFirst({
        where: { action: "test.create", targetUrn: "urn:li:test:owned" },
      });
      expect(audit).toMatchObject({ actorUrn: ROOT, details: { name: "test owned", onTypes: ["dataset"] } });
    });

    it("answers NOT_FOUND, not an internal error, to the second of two concurrent deletes of a test", async () => {
      const urn = await createTest("raced", CHART_TITLED);
      const answers = await Promise.all([gql(DELETE, { urn }), gql(DELETE, { urn })]);
      expect(answers.map((a) => a.errors?.[0]?.extensions?.code ?? "ok").sort()).toEqual(["NOT_FOUND", "ok"]);
    });

    it("generates an id when none is given", async () => {
      const urn = await createTest("", CHART_TITLED);
      expect(urn).toMatch(/^urn:li:test:[0-9a-f-]{36}$/);
      expect(await gql(DELETE, { urn })).toEqual({ data: { deleteTest: true } });
    });

    it.each([
      [
        '{"on": {"types": ["dataset"]}, "rules": [{"property": "a", "operator": "exists"}, {"property": "b", "operator": "bigger"}]}',
        "Failed to validate test definition: rules[1].operator: unknown operator 'bigger'",
      ],
      [
        '{"on": {"types": ["datset"]}, "rules": {"property": "a", "operator": "exists"}}',
        "Failed to validate test definition: on.types[0]: unknown entity type 'datset' (known: dataset, chart",
      ],
      [
        '{"on": {"types": ["dataset"]}, "rules": {"property": "a", "operator": "regex_match", "value": "("}}',
        "Failed to validate test definition: rules.value",
      ],
      ["on: [", "Failed to validate test definition: not valid YAML"],
    ])("refuses an invalid definition %#, saying what and where, and stores nothing", async (json, message) => {
      const before = await h.prisma.metadataTest.count();
      const body = await gql(CREATE, { input: { id: "bad", name: "bad", category: "x", definition: { json } } });
      expect(body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
      expect(body.errors?.[0]?.message).toContain(message);
      expect(await h.prisma.metadataTest.count()).toBe(before);
    });

    it("refuses a duplicate id, a bad name and a bad id with the right codes", async () => {
      const dup = await gql(CREATE, {
        input: { id: "owned", name: "again", category: "x", definition: { json: HAS_OWNER } },
      });
      expect(dup.errors?.[0]).toMatchObject({
        message: "Test urn:li:test:owned already exists",
        extensions: { code: "CONFLICT" },
      });
      const noName = await gql(CREATE, { input: { name: " ", category: "x", definition: { json: HAS_OWNER } } });
      expect(noName.errors?.[0]?.message).toBe("input.name must be 1 to 256 characters long");
      const badId = await gql(CREATE, {
        input: { id: "a(b", name: "n", category: "x", definition: { json: HAS_OWNER } },
      });
      expect(badId.errors?.[0]).toMatchObject({ extensions: { code: "BAD_USER_INPUT" } });
      expect(badId.errors?.[0]?.message).toContain("input.id");
    });

    it("updates and deletes with NOT_FOUND for unknown tests, auditing each change", async () => {
      const urn = await createTest("temp", HAS_DESCRIPTION);
      const input = { name: "renamed", category: "Docs", definition: { json: DESCRIBED_AS_ORDERS }, state: "INACTIVE" };
      expect(await gql(UPDATE, { urn, input })).toEqual({ data: { updateTest: urn } });
      expect(await h.prisma.metadataTest.findUnique({ where: { urn } })).toMatchObject({
        name: "renamed",
        state: "INACTIVE",
        definitionText: DESCRIBED_AS_ORDERS,
      });
      const missing = await gql(UPDATE, { urn: "urn:li:test:none", input });
      expect(missing.errors?.[0]).toMatchObject({
        message: "Test urn:li:test:none does not exist",
        extensions: { code: "NOT_FOUND" },
      });
      expect(await gql(DELETE, { urn })).toEqual({ data: { deleteTest: true } });
      expect((await gql(DELETE, { urn })).errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
      const actions = await h.prisma.auditEvent.findMany({ where: { targetUrn: urn }, orderBy: { id: "asc" } });
      expect(actions.map((a) => a.action)).toEqual(["test.create", "test.update", "test.delete"]);
    });

    it("lists tests oldest first with paging and a query", async () => {
      const all = await gql(`{ listTests(input: {start: 0, count: 1}) { start count total tests { urn } } }`, {});
      expect(all.data?.listTests).toEqual({ start: 0, count: 1, total: 2, tests: [{ urn: "urn:li:test:described" }] });
      const found = await gql(`{ listTests(input: {query: "OWNED"}) { total tests { urn } } }`, {});
      expect(found.data?.listTests).toEqual({ total: 1, tests: [{ urn: "urn:li:test:owned" }] });
    });

    it("needs VIEW_TESTS to read and MANAGE_TESTS to change", async () => {
      const denied = await gql(`{ listTests(input: {}) { total } }`, {}, NOBODY);
      expect(denied.errors?.[0]).toMatchObject({
        message: `${NOBODY} is unauthorized to list metadata tests.`,
        extensions: { code: "FORBIDDEN" },
      });
      expect((await gql(`{ listTests(input: {}) { total } }`, {}, VIEWER)).data?.listTests).toEqual({ total: 2 });
      const create = { input: { id: "v", name: "v", category: "x", definition: { json: HAS_DESCRIPTION } } };
      expect((await gql(CREATE, create, VIEWER)).errors?.[0]?.message).toBe(
        `${VIEWER} is unauthorized to create metadata tests.`,
      );
      expect((await gql(DELETE, { urn: "urn:li:test:owned" }, VIEWER)).errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
      // MANAGE_TESTS implies VIEW_TESTS
      expect((await gql(`{ test(urn: "urn:li:test:owned") { urn } }`, {}, MANAGER)).data?.test).toEqual({
        urn: "urn:li:test:owned",
      });
    });
  });
});
