/**
 * The table retention chores on real PostgreSQL (docs/limits.md "Retention"): aspect versions past each aspect's
 * maximum, access token rows that stopped working long ago (not those deferred work still acts through), and old audit
 * rows go; everything the rules keep stays; a firing with its budget spent stops after one statement's batch.
 */
import { randomUUID } from "node:crypto";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type { Job } from "bullmq";
import { tableRetentionChores } from "../src/table-retention";

const ACTOR = "urn:li:corpuser:admin";
const CONFIG = {
  ASPECT_MAX_VERSIONS: 20,
  ASPECT_MAX_VERSIONS_BY_ASPECT: { testResults: 3 },
  ACCESS_TOKEN_RETENTION_DAYS: 30,
  AUDIT_RETENTION_DAYS: 400,
};

describe("table retention chores", () => {
  let db: TestDatabase;
  let database: Database;
  const fire = async (name: string, budgetMs?: number) => {
    const chore = tableRetentionChores(database.pool, CONFIG, budgetMs).find((c) => c.name === name)!;
    return chore.run({} as never, {} as Job);
  };

  beforeAll(async () => {
    db = await createTestDatabase("table_retention");
    database = createDatabase(db.url);
  });
  afterAll(async () => {
    await database.close();
    await db.drop();
  });

  it("keeps the newest versions of each aspect (testResults' fewer), the latest always", async () => {
    const urns = [
      "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)",
      "urn:li:dataset:(urn:li:dataPlatform:hive,b,PROD)",
    ];
    await database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       SELECT u, a.name, v, 'dataset', jsonb_build_object('v', v), $2
         FROM unnest($1::text[]) AS u,
              (VALUES ('datasetProperties', 30), ('testResults', 10), ('ownership', 5)) AS a(name, n),
              generate_series(1, a.n) AS v`,
      [urns, ACTOR],
    );
    expect(await fire("prune-aspect-versions")).toEqual({ deleted: 2 * (10 + 7) });
    const { rows } = await database.pool.query<{ aspect: string; min: number; max: number; n: number }>(
      `SELECT aspect_name AS aspect, min(version) AS min, max(version) AS max, count(*)::int AS n
         FROM aspect WHERE urn = $1 GROUP BY aspect_name ORDER BY aspect_name`,
      [urns[0]],
    );
    expect(rows).toEqual([
      { aspect: "datasetProperties", min: 11, max: 30, n: 20 },
      { aspect: "ownership", min: 1, max: 5, n: 5 },
      { aspect: "testResults", min: 8, max: 10, n: 3 },
    ]);
    expect(await fire("prune-aspect-versions")).toEqual({ deleted: 0 });
  });

  it("deletes token rows that stopped working past the retention, except those deferred work acts through", async () => {
    const token = async (name: string, sql: { revoked?: string; expires?: string; parent?: string } = {}) => {
      const id = randomUUID();
      await database.pool.query(
        `INSERT INTO access_token (id, name, actor_urn, owner_urn, token_hash, revoked_at, expires_at, parent_token_id)
         VALUES ($1, $2, $3, $3, $4, now() - $5::interval, now() - $6::interval, $7)`,
        [
          id,
          name,
          ACTOR,
          id.replace(/-/g, "").padEnd(64, "0"),
          sql.revoked ?? null,
          sql.expires ?? null,
          sql.parent ?? null,
        ],
      );
      return id;
    };
    const revokedLongAgo = await token("revoked 40 days ago", { revoked: "40 days" });
    const expiredLongAgo = await token("expired 40 days ago", { expires: "40 days" });
    const revokedLately = await token("revoked 10 days ago", { revoked: "10 days" });
    const live = await token("live", { expires: "-10 days" });
    const backsATest = await token("expired, sets a scheduled test", { expires: "40 days" });
    const parent = await token("revoked, parent of a kept token", { revoked: "40 days" });
    const child = await token("child, revoked lately", { revoked: "1 day", parent });
    await database.pool.query(
      `INSERT INTO metadata_test (urn, name, category, definition_text, definition, on_types, created_by, owner_urn,
                                  owner_token_id, updated_at)
       VALUES ('urn:li:test:kept', 'kept', 'x', '{}', '{}', ARRAY['dataset'], $1, $1, $2, now())`,
      [ACTOR, backsATest],
    );
    expect(await fire("prune-access-tokens")).toEqual({ deleted: 2 });
    const { rows } = await database.pool.query<{ id: string }>(`SELECT id::text FROM access_token`);
    expect(rows.map((r) => r.id).sort()).toEqual([revokedLately, live, backsATest, parent, child].sort());
    expect(rows.map((r) => r.id)).not.toContain(revokedLongAgo);
    expect(rows.map((r) => r.id)).not.toContain(expiredLongAgo);
  });

  it("deletes audit rows past AUDIT_RETENTION_DAYS, one batch per firing once its budget is spent", async () => {
    await database.pool.query(
      `INSERT INTO audit_event (actor_urn, action, target_urn, details, created_at)
       SELECT $1, 'test.old', NULL, '{}'::jsonb, now() - interval '500 days' FROM generate_series(1, 6000)
       UNION ALL
       SELECT $1, 'test.recent', NULL, '{}'::jsonb, now() - interval '300 days' FROM generate_series(1, 10)`,
      [ACTOR],
    );
    const left = async () =>
      (
        await database.pool.query<{ action: string; n: number }>(
          `SELECT action, count(*)::int AS n FROM audit_event WHERE action LIKE 'test.%' GROUP BY action ORDER BY action`,
        )
      ).rows;
    expect(await fire("prune-audit-events", 0)).toEqual({ deleted: 5_000 });
    expect(await left()).toEqual([
      { action: "test.old", n: 1_000 },
      { action: "test.recent", n: 10 },
    ]);
    expect(await fire("prune-audit-events")).toEqual({ deleted: 1_000 });
    expect(await left()).toEqual([{ action: "test.recent", n: 10 }]);
  });
});
