/**
 * listTasks' statements are read along an index for every filter (real PostgreSQL, a table of 20,000 tasks,
 * statistics gathered): EXPLAIN of each page statement shows an index scan of `task` and no sequential scan, and the
 * creator and state filters use the indexes made for them.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { listTasksQueries, type TaskFilter } from "../src";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe("listTasks' statements", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("task_listing");
    db = createDatabase(testDb.url);
    // 20,000 tasks over 200 creators and every state, a minute apart; a few active ones live, a few lapsed.
    await db.pool.query(`
      INSERT INTO task (id, type, state, request, progress, created_by, created_at, lease_expires_at)
      SELECT 't' || i,
             (CASE WHEN i % 3 = 0 THEN 'EVALUATE_TESTS' ELSE 'TRUNCATE_TIMESERIES' END)::"TaskType",
             (CASE WHEN i % 100 = 0 THEN 'waiting' WHEN i % 100 = 1 THEN 'active'
                   WHEN i % 10 = 2 THEN 'failed' WHEN i % 10 = 3 THEN 'cancelled' ELSE 'completed' END)::"TaskState",
             '{}', '{}', 'urn:li:corpuser:u' || (i % 200),
             timestamptz '2026-01-01' + make_interval(mins => i),
             CASE WHEN i % 100 = 1 THEN now() + (CASE WHEN i % 200 = 1 THEN interval '1 hour' ELSE interval '-1 hour' END) END
        FROM generate_series(1, 20000) AS i`);
    await db.pool.query("ANALYZE task");
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  const T = Date.UTC(2026, 0, 5);
  // The filters the new indexes were made for must use them (with the created_at index alone they scan and filter).
  const INDEX_FOR: Record<string, string> = {
    "a creator": "task_created_by_created_at_id_idx",
    failed: "task_state_created_at_id_idx",
  };
  it.each<[string, TaskFilter]>([
    ["no filter", {}],
    ["a creator", { createdBy: "urn:li:corpuser:u7" }],
    ["waiting (lapsed leases included)", { state: "waiting" }],
    ["active (live leases only)", { state: "active" }],
    ["failed", { state: "failed" }],
    ["a type", { type: "EVALUATE_TESTS" }],
    ["a time window", { createdAfter: T, createdBefore: T + 3_600_000 }],
    [
      "everything at once",
      { type: "TRUNCATE_TIMESERIES", state: "failed", createdBy: "urn:li:corpuser:u12", createdAfter: T },
    ],
  ])("reads a page along an index: %s", async (what, filter) => {
    const { page } = listTasksQueries(filter, { start: 0, count: 20 });
    const { rows } = await db.pool.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${page.text}`,
      page.values,
    );
    const nodes = nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan);
    const onTask = nodes.filter((n) => n["Relation Name"] === "task" || n["Index Name"]?.startsWith("task_"));
    expect(onTask.map((n) => n["Node Type"])).not.toContain("Seq Scan");
    expect(onTask.some((n) => /Index/.test(n["Node Type"]))).toBe(true);
    if (INDEX_FOR[what]) expect(onTask.map((n) => n["Index Name"])).toContain(INDEX_FOR[what]);
  });
});
