/**
 * Pushing results (real PostgreSQL): two requests for one entity that land in the same job both keep their results.
 * The concurrent case across jobs is covered through the gateway in services/gateway/test/metadata-tests.int.spec.ts.
 */
import { AspectRepository, createDatabase, inTransaction, loadGrants, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { ResultsPusher, TEST_RESULTS_ASPECT } from "../src/results.pusher";

const URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)";
const ACTOR = "urn:li:corpuser:admin";

describe("ResultsPusher", () => {
  let db: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    db = await createTestDatabase("results_pusher");
    database = createDatabase(db.url);
    // Results stand only for tests that exist and select the entity's type.
    await database.pool.query(
      `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn, updated_at)
       SELECT urn, urn, 'x', '{}', '{}', ARRAY['dataset'], $2, $2, now() FROM unnest($1::text[]) AS urn`,
      [["urn:li:test:a", "urn:li:test:b"], ACTOR],
    );
  });
  afterAll(async () => {
    await database.close();
    await db.drop();
  });

  it("keeps the results of every request for one entity pushed in the same job", async () => {
    const item = (test: string) => ({
      entityType: "dataset",
      actorUrn: ACTOR,
      evaluated: new Set([test]),
      evaluation: {
        urn: URN,
        passing: [{ test, type: "SUCCESS" as const }],
        failing: [],
        notApplicable: [],
        evaluatedAt: 1,
      },
    });
    const aspects = new AspectRepository();
    const pusher = new ResultsPusher(aspects, (urn) => loadGrants(database.prisma, urn, ACTOR));
    await inTransaction(database.pool, (client) => pusher.push(client, [item("urn:li:test:a"), item("urn:li:test:b")]));
    const stored = await aspects.latestOfEach(database.pool, TEST_RESULTS_ASPECT, [URN]);
    expect(stored.get(URN)).toEqual({
      passing: [
        { test: "urn:li:test:a", type: "SUCCESS" },
        { test: "urn:li:test:b", type: "SUCCESS" },
      ],
      failing: [],
    });
  });
});
