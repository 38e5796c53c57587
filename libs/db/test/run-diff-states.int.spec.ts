/**
 * The run diff's per-entity reads of the result history (batchEntityStates) go along the pair's own index whatever
 * the statistics (real PostgreSQL). A test whose last run is older than the history the statistics saw (a weekly test
 * beside daily ones) made "the pair's state at the baseline" look nearly free along a btree on `at` alone, and walking
 * it backwards stepped over the whole history before the baseline for every entity of the batch.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type pg from "pg";
import { batchEntityStates } from "../src";

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const TEST = "urn:li:test:diffed";
const urnOf = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.t${String(i).padStart(6, "0")},PROD)`;

describe("the run diff's reads of the result history", () => {
  let testDb: TestDatabase;
  let db: Database;
  const firstRun = new Date(Date.now() - 7 * 86_400_000);
  const baseline = new Date(firstRun.getTime() + 60_000);

  beforeAll(async () => {
    testDb = await createTestDatabase("run_diff_states");
    db = createDatabase(testDb.url);
    // Statistics that saw only other tests' recent history.
    await db.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       SELECT $1, 'urn:li:test:other' || i, true, NULL, now() - interval '10 minutes' FROM generate_series(1, 10) AS i`,
      [urnOf(0)],
    );
    await db.pool.query("ANALYZE test_result_transition");
    // This test's last run, a week ago (its results the baseline's states): each entity of the batch has one.
    await db.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       SELECT 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t' || lpad(i::text, 6, '0') || ',PROD)', $1, i % 2 = 0,
              NULL, $2::timestamptz
         FROM generate_series(1, 5000) AS i`,
      [TEST, firstRun.toISOString()],
    );
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("reads each entity's states along the pair's index, not by walking the history's times", async () => {
    let sent: { text: string; values: unknown[] } | undefined;
    const recording = {
      query: (text: string, values: unknown[]) => {
        sent = { text, values };
        return db.pool.query(text, values);
      },
    } as unknown as pg.ClientBase;
    const urns = Array.from({ length: 1000 }, (_, i) => urnOf(i + 1));
    const states = await batchEntityStates(recording, TEST, urns, baseline, new Date(0));
    expect(states).toHaveLength(1000);
    expect(states.slice(0, 2).map((s) => [s.passing, s.previous])).toEqual([
      [false, false],
      [true, true],
    ]);
    const { rows } = await db.pool.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${sent!.text}`,
      sent!.values,
    );
    const nodes = nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan);
    // Along the pair's indexes (an index scan, or a bitmap scan of one): never the history's time index, nor a scan
    // of the whole table.
    const indexes = nodes.flatMap((n) => n["Index Name"] ?? []);
    expect(indexes.length).toBeGreaterThan(0);
    for (const index of indexes) expect(index).toMatch(/^test_result_transition_(urn_test_urn|test_urn_urn)_/);
    expect(
      nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "test_result_transition"),
    ).toEqual([]);
  });
});
