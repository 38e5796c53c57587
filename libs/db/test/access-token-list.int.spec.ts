/**
 * The token list's page of one user is read along that user's index whatever the statistics (real PostgreSQL): one
 * user holding most live tokens and a few newer ones of another user is where the (created_at, id) index looked as cheap,
 * and scanning it stepped over every newer token of the other user, a heap fetch each, before the page.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type pg from "pg";
import { accessTokenPage, type AccessTokenFilter } from "../src";

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const BULK = "urn:li:corpuser:bulk";
const OTHER = "urn:li:corpuser:other";

describe("the token list's page of one user", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("access_token_list");
    db = createDatabase(testDb.url);
    // 10,000 tokens of one user, a second apart; 100 newer ones of another user, just created, for an hour.
    await db.pool.query(
      `INSERT INTO access_token (id, name, actor_urn, owner_urn, token_hash, created_at, expires_at)
       SELECT gen_random_uuid(), 'bulk ' || i, $1, $1, md5(i::text) || md5((i + 1)::text),
              now() - i * interval '1 second', now() + interval '1 day'
         FROM generate_series(1, 10000) AS i
       UNION ALL
       SELECT gen_random_uuid(), 'other ' || i, $2, $2, md5((-i)::text) || md5((-i - 1)::text),
              now(), now() + interval '1 hour'
         FROM generate_series(1, 100) AS i`,
      [BULK, OTHER],
    );
    await db.pool.query("VACUUM ANALYZE access_token");
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  /** The page, and the indexes the plan of its statement reads (the statement as accessTokenPage sent it). */
  async function pageAndIndexes(filters: AccessTokenFilter[]) {
    let sent: pg.QueryConfig | undefined;
    const recording = {
      query: (config: pg.QueryConfig) => {
        sent = config;
        return db.pool.query(config);
      },
    } as unknown as pg.Pool;
    const page = await accessTokenPage(recording, filters, new Date(), 0, 100);
    const { rows } = await db.pool.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${sent!.text}`,
      sent!.values,
    );
    return { page, indexes: nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan).flatMap((n) => n["Index Name"] ?? []) };
  }

  it.each<[string, string]>([
    ["actorUrn", "access_token_actor_urn_created_at_id_idx"],
    ["ownerUrn", "access_token_owner_urn_created_at_id_idx"],
  ])("reads one %s along its own index, newest first", async (field, index) => {
    const { page, indexes } = await pageAndIndexes([
      { field: field as "actorUrn" | "ownerUrn", values: [BULK], negated: false },
    ]);
    expect(indexes).toContain(index);
    expect(indexes).not.toContain("access_token_created_at_id_idx");
    expect(page.total).toBe(10000);
    expect(page.tokens.map((t) => t.name)).toEqual(Array.from({ length: 100 }, (_, i) => `bulk ${i + 1}`));
  });

  it("pages several users, and a negated user, newest first as before", async () => {
    const both = await pageAndIndexes([{ field: "actorUrn", values: [BULK, OTHER], negated: false }]);
    expect(both.page.total).toBe(10100);
    expect(both.page.tokens[0]!.actorUrn).toBe(OTHER);
    const notOther = await pageAndIndexes([{ field: "actorUrn", values: [OTHER], negated: true }]);
    expect(notOther.page.total).toBe(10000);
    expect(notOther.page.tokens[0]!.name).toBe("bulk 1");
  });
});
