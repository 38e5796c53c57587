/**
 * Test actions write only what the test's owner may (the gateway over real HTTP and GraphQL, a real BullMQ evaluation
 * worker, real PostgreSQL): saving them needs their privileges (EDIT_ENTITY_*), and each push leaves out, and audits,
 * those its owner no longer holds.
 */
import { bearer, createToken, grant, ROOT, systemClientHeaders } from "./support/gateway-harness";
import {
  DATASET,
  ANN,
  STEWARDS,
  NEEDS_DOC,
  DESCRIBED,
  FLAG_DEFINITION,
  CREATE,
  UPDATE,
  AUDIT,
} from "./support/test-actions";
import { startTestActionsHarness } from "./support/test-actions-harness";

describe("test actions", () => {
  const ta = startTestActionsHarness();
  const { asRoot, undocumented, gql, ingest, evaluate, versions, latest, auditOf } = ta;

  describe("what their owner may write", () => {
    const TAGGER = "urn:li:corpuser:tagger";
    const INGESTER = "urn:li:corpuser:ingester";
    const LEAVER = "urn:li:corpuser:leaver";
    /** Tags and owns what fails: ADD_TAGS needs EDIT_ENTITY_TAGS, ADD_OWNERS EDIT_ENTITY_OWNERS. */
    const TAG_AND_OWN = JSON.stringify({
      on: { types: ["dataset"] },
      rules: [DESCRIBED],
      actions: {
        failing: [
          { type: "ADD_TAGS", values: [NEEDS_DOC] },
          { type: "ADD_OWNERS", values: [STEWARDS] },
          { type: "REMOVE_TAGS", values: ["urn:li:tag:reviewed"] },
        ],
      },
    });
    const TAG_ONLY = JSON.stringify({
      on: { types: ["dataset"] },
      rules: [DESCRIBED],
      actions: { failing: [{ type: "ADD_TAGS", values: [NEEDS_DOC] }] },
    });
    const input = (id: string, json: string, more: Record<string, unknown> = {}) => ({
      input: { id, name: id, category: "Docs", definition: { json }, ...more },
    });
    const errorOf = (body: { errors?: Array<{ message: string; extensions?: { code?: string } }> }) => ({
      code: body.errors?.[0]?.extensions?.code,
      message: body.errors?.[0]?.message,
    });
    const testRow = (id: string) => ta.gateway.prisma.metadataTest.findUnique({ where: { urn: `urn:li:test:${id}` } });

    it("saves actions only for a caller who holds their privileges: MANAGE_TESTS alone is not enough", async () => {
      await grant(ta.gateway, TAGGER, ["MANAGE_TESTS"]);
      const asTagger = systemClientHeaders(TAGGER);
      const refused = await ta.gateway.graphql(CREATE, input("tagger-1", TAG_AND_OWN), asTagger);
      expect(errorOf(refused.body)).toEqual({
        code: "FORBIDDEN",
        message:
          `${TAGGER} is unauthorized to save these test actions: they need EDIT_ENTITY_OWNERS (for ADD_OWNERS), ` +
          `EDIT_ENTITY_TAGS (for ADD_TAGS, REMOVE_TAGS), which it does not hold.`,
      });
      expect(await testRow("tagger-1")).toBeNull();
      // A test without actions needs nothing more.
      const plain = JSON.stringify({ on: { types: ["dataset"] }, rules: [DESCRIBED] });
      expect((await ta.gateway.graphql(CREATE, input("tagger-plain", plain), asTagger)).body.errors).toBeUndefined();

      // EDIT_ENTITY_TAGS granted: tag actions are saved, ownership ones still refused, naming only what is missing.
      await grant(ta.gateway, TAGGER, ["EDIT_ENTITY_TAGS"]);
      expect((await ta.gateway.graphql(CREATE, input("tagger-1", TAG_ONLY), asTagger)).body.errors).toBeUndefined();
      expect(errorOf((await ta.gateway.graphql(CREATE, input("tagger-2", TAG_AND_OWN), asTagger)).body)).toEqual({
        code: "FORBIDDEN",
        message: expect.stringContaining("they need EDIT_ENTITY_OWNERS (for ADD_OWNERS), which it does not hold"),
      });
      // Nor can it make a test someone else gave ownership actions act for it: changing the rules is refused...
      const rootsTest = await gql(CREATE, input("roots-tag-and-own", TAG_AND_OWN));
      expect(rootsTest.errors).toBeUndefined();
      const changedRules = TAG_AND_OWN.replace("datasetProperties.description", "datasetProperties.name");
      const edit = await ta.gateway.graphql(
        UPDATE,
        {
          urn: "urn:li:test:roots-tag-and-own",
          input: { name: "x", category: "Docs", definition: { json: changedRules } },
        },
        asTagger,
      );
      expect(errorOf(edit.body)).toMatchObject({
        code: "FORBIDDEN",
        message: expect.stringContaining("EDIT_ENTITY_OWNERS"),
      });
      // ...while renaming it, its definition as it was, needs none of its actions' privileges.
      const rename = await ta.gateway.graphql(
        UPDATE,
        {
          urn: "urn:li:test:roots-tag-and-own",
          input: { name: "renamed", category: "Docs", definition: { json: TAG_AND_OWN } },
        },
        asTagger,
      );
      expect(rename.body.errors).toBeUndefined();
      expect(await testRow("roots-tag-and-own")).toMatchObject({ name: "renamed", definitionText: TAG_AND_OWN });

      // INGEST_METADATA implies every EDIT_ENTITY_* privilege.
      await grant(ta.gateway, INGESTER, ["MANAGE_TESTS", "INGEST_METADATA"]);
      const ingester = await ta.gateway.graphql(
        CREATE,
        input("ingester-all", FLAG_DEFINITION),
        systemClientHeaders(INGESTER),
      );
      expect(ingester.body.errors).toBeUndefined();
    });

    it("refuses them through a scoped token whose scopes leave a privilege out, though its user holds it", async () => {
      const scoped = bearer((await createToken(ta.gateway, TAGGER, asRoot, { scopes: ["MANAGE_TESTS"] })).token);
      const res = await ta.gateway.graphql(CREATE, input("scoped-tagger", TAG_ONLY), scoped);
      expect(errorOf(res.body)).toEqual({
        code: "FORBIDDEN",
        message:
          `${TAGGER} is unauthorized to save these test actions: they need EDIT_ENTITY_TAGS (for ADD_TAGS), ` +
          `which its access token leaves out.`,
      });
      expect(await testRow("scoped-tagger")).toBeNull();
      const wider = bearer(
        (await createToken(ta.gateway, TAGGER, asRoot, { scopes: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"] })).token,
      );
      expect((await ta.gateway.graphql(CREATE, input("scoped-tagger", TAG_ONLY), wider)).body.errors).toBeUndefined();
    });

    it("leaves out of each push, and audits, the actions whose privilege the owner has lost since; the results are pushed", async () => {
      const body = await gql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: "leaver owners", state: "ACTIVE", privileges: ["EDIT_ENTITY_OWNERS"], actors: { users: [LEAVER] } },
      });
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      await grant(ta.gateway, LEAVER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
      const saved = await ta.gateway.graphql(CREATE, input("leavers", TAG_AND_OWN), systemClientHeaders(LEAVER));
      expect(saved.body.errors).toBeUndefined();
      const TEST = "urn:li:test:leavers";
      const [ONE, TWO] = [DATASET("leaver_1"), DATASET("leaver_2")];
      await ingest(...[ONE, TWO].flatMap(undocumented));
      // The owner loses EDIT_ENTITY_OWNERS (its policy is deleted); someone else pushes the test's results.
      const deleted = await gql(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: body.data!.createPolicy });
      expect(deleted.errors).toBeUndefined();

      // The dry view says which action a push would leave out, and why.
      const dry = await evaluate(ONE, false, [TEST]);
      expect(dry.failing[0]!.actions).toEqual([
        { type: "ADD_TAGS", params: { values: [NEEDS_DOC] }, wouldChange: true },
        {
          type: "ADD_OWNERS",
          params: { values: [STEWARDS] },
          wouldChange: false,
          missingPrivilege: "EDIT_ENTITY_OWNERS",
        },
        { type: "REMOVE_TAGS", params: { values: ["urn:li:tag:reviewed"] }, wouldChange: false },
      ]);

      const res = await ta.gateway.post(
        "/gms/test?action=batchEvaluate",
        { urns: [ONE, TWO], push: true, testUrns: [TEST] },
        asRoot,
      );
      expect(res.status).toBe(200);
      for (const urn of [ONE, TWO]) {
        const after = await latest(urn);
        expect(after.testResults).toEqual(
          expect.objectContaining({ failing: [expect.objectContaining({ test: TEST })] }),
        );
        expect(after.globalTags).toEqual({ tags: [{ tag: "urn:li:tag:finance" }, { tag: NEEDS_DOC }] });
        // Ownership as ingested: the stewards were not added.
        expect((await versions(urn)).ownership).toEqual([{ owners: [{ owner: ANN, type: "TECHNICAL_OWNER" }] }]);
        expect((await auditOf(urn)).map((e) => e.details.actions)).toEqual([
          [{ type: "ADD_TAGS", params: { values: [NEEDS_DOC] }, aspect: "globalTags" }],
        ]);
      }
      const refusals = async () => {
        const page = await gql(AUDIT, { input: { action: "test.actions.refused", targetUrn: TEST, count: 100 } });
        if (page.errors) throw new Error(JSON.stringify(page.errors));
        return (page.data!.listAuditEvents as { events: Array<Record<string, unknown>> }).events.map((e) => ({
          ...e,
          details: JSON.parse(e.details as string) as Record<string, unknown>,
        }));
      };
      // One row for the push, naming the owner, what it lacks and how many entities it held back from.
      expect(await refusals()).toEqual([
        {
          actorUrn: ROOT,
          action: "test.actions.refused",
          targetUrn: TEST,
          details: {
            owner: LEAVER,
            missingPrivileges: ["EDIT_ENTITY_OWNERS"],
            actions: ["ADD_OWNERS"],
            entities: 2,
            via: "test-action",
          },
        },
      ]);

      // Regranted: the next push adds the stewards, and nothing more is refused.
      await grant(ta.gateway, LEAVER, ["EDIT_ENTITY_OWNERS"]);
      await evaluate(ONE, true, [TEST]);
      expect((await latest(ONE)).ownership).toEqual(
        expect.objectContaining({
          owners: [
            { owner: ANN, type: "TECHNICAL_OWNER" },
            { owner: STEWARDS, type: "TECHNICAL_OWNER" },
          ],
        }),
      );
      expect(await refusals()).toHaveLength(1);
    });
  });
});
