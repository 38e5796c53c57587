/**
 * A run diff's batch (recordRunDiffBatch), against real PostgreSQL: the entities' states read from the result history,
 * the counts and bounded lists grown in one statement; and those reads go along the pair's own indexes, never the
 * history's time index nor a scan of it. (When the baseline was a parameter, statistics that saw only recent history
 * made "the pair's state at the baseline" look nearly free along a btree on `at` alone, and walking it backwards
 * stepped over the whole history before the baseline for every entity; the baseline is now read from the run's row,
 * which the planner cannot see, and the statistics are kept so for the case.)
 */
import { createDatabase, findRunDiff, openRunDiff, recordRunDiffBatch, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type pg from "pg";

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const TEST = "urn:li:test:diffed";
const LIMITS = { entities: 100, bytes: 64 * 1024 };
const urnOf = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.t${String(i).padStart(6, "0")},PROD)`;

describe("a run diff's batch", () => {
  let testDb: TestDatabase;
  let db: Database;
  let runs = 0;

  /** A run of its own test opened at `at` (its baseline and flap window start there), with `history` recorded. */
  const openRun = async (
    at: number,
    history: Array<[urn: string, passing: boolean, previous: boolean | null, at: number]>,
  ) => {
    const run = { runId: `run-${++runs}`, testUrn: `${TEST}-${runs}` };
    await db.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       SELECT u, $1, p, v, to_timestamp(t / 1000.0) FROM unnest($2::text[], $3::boolean[], $4::boolean[], $5::int8[]) AS h(u, p, v, t)`,
      [
        run.testUrn,
        history.map((h) => h[0]),
        history.map((h) => h[1]),
        history.map((h) => h[2]),
        history.map((h) => h[3]),
      ],
    );
    await openRunDiff(db.pool as unknown as pg.ClientBase, {
      ...run,
      at: new Date(at),
      flapChanges: 2,
      flapRuns: 5,
      maxRuns: 10,
    });
    return run;
  };

  beforeAll(async () => {
    testDb = await createTestDatabase("run_diff_batches");
    db = createDatabase(testDb.url);
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("lists changes against the baseline and flaps past the threshold; unchanged entities only count", async () => {
    const t0 = Date.now() - 3_600_000;
    const run = await openRun(t0, [
      ["a", true, null, t0 - 10],
      ["a", false, true, t0 + 1],
      ["b", false, null, t0 - 10],
      ["b", true, false, t0 + 1],
      ["b", false, true, t0 + 2],
      ["b", true, false, t0 + 3],
      ["c", true, null, t0 - 10],
      ["c", false, true, t0 + 1],
      ["c", true, false, t0 + 2],
      ["c", false, true, t0 + 3],
      ["c", true, false, t0 + 4],
      ["d", false, null, t0 + 20],
    ]);
    // "e" has no recorded result: not counted
    expect(
      await recordRunDiffBatch(db.pool, {
        runId: run.runId,
        urns: ["a", "b", "c", "d", "e"],
        evaluatedAt: t0 + 15,
        limits: LIMITS,
      }),
    ).toBe(true);
    expect(await findRunDiff(db.pool, run.testUrn, run.runId)).toMatchObject({
      evaluated: 4,
      newlyFailingCount: 2,
      newlyFailing: [
        { urn: "a", previous: true },
        { urn: "d", previous: null },
      ],
      newlyPassingCount: 1,
      newlyPassing: [{ urn: "b", previous: false }],
      flappingCount: 2,
      flapping: [
        { urn: "b", passing: true, changes: 3 },
        { urn: "c", passing: true, changes: 4 },
      ],
      // the latest recorded change, when later than the batch's evaluation (a pair's times never go backwards)
      lastBatchAt: new Date(t0 + 20),
    });
  });

  it("answers false for a run whose row is not open, and writes nothing", async () => {
    expect(
      await recordRunDiffBatch(db.pool, {
        runId: "never-opened",
        urns: ["a"],
        evaluatedAt: Date.now(),
        limits: LIMITS,
      }),
    ).toBe(false);
    expect((await db.pool.query("SELECT 1 FROM test_run_diff WHERE run_id = 'never-opened'")).rowCount).toBe(0);
  });

  it(`keeps at most ${LIMITS.entities} entities per list, the first in urn order, counting all`, async () => {
    const t0 = Date.now() - 3_600_000;
    const key = (batch: number, i: number) => `urn:${batch}:${String(i).padStart(2, "0")}`;
    const batches = [0, 1, 2].map((batch) => Array.from({ length: 50 }, (_, i) => key(batch, i)));
    const run = await openRun(
      t0,
      batches.flat().map((urn) => [urn, false, null, t0 + 1] as [string, boolean, null, number]),
    );
    for (const urns of batches)
      await recordRunDiffBatch(db.pool, { runId: run.runId, urns, evaluatedAt: t0 + 2, limits: LIMITS });
    const diff = (await findRunDiff(db.pool, run.testUrn, run.runId))!;
    expect(diff.newlyFailingCount).toBe(150);
    expect(diff.newlyFailing.map((e) => e.urn)).toEqual([...batches[0]!, ...batches[1]!]);
  });

  it("ends a list at the first entry past its bytes, in that batch and every later one", async () => {
    const t0 = Date.now() - 3_600_000;
    // Entries of mixed sizes, in urn order: a, b (long), c; then d, e (short) in a later batch.
    const urns = ["urn:a", `urn:b${"x".repeat(150)}`, "urn:c", "urn:d", "urn:e"];
    const run = await openRun(
      t0,
      urns.map((urn) => [urn, true, null, t0 + 1] as [string, boolean, null, number]),
    );
    const bytes = 200; // a, and not b: c would fit after a, but the list ends at b
    const limits = { entities: 100, bytes };
    await recordRunDiffBatch(db.pool, { runId: run.runId, urns: urns.slice(0, 3), evaluatedAt: t0 + 2, limits });
    await recordRunDiffBatch(db.pool, { runId: run.runId, urns: urns.slice(3), evaluatedAt: t0 + 2, limits });
    const diff = (await findRunDiff(db.pool, run.testUrn, run.runId))!;
    expect(diff.newlyPassingCount).toBe(5);
    expect(diff.newlyPassing).toEqual([{ urn: "urn:a", previous: null }]);
    // within the bound as PostgreSQL writes the list (and so as JSON answers it, which is more compact)
    const { rows } = await db.pool.query<{ bytes: number }>(
      "SELECT octet_length(newly_passing::text) AS bytes FROM test_run_diff WHERE run_id = $1",
      [run.runId],
    );
    expect(rows[0]!.bytes).toBeLessThanOrEqual(bytes);
  });

  it("fills a list to exactly its bytes, as PostgreSQL writes the list", async () => {
    const t0 = Date.now() - 3_600_000;
    const urns = Array.from({ length: 40 }, (_, i) => `urn:li:corpuser:u${String(i).padStart(2, "0")}`);
    const run = await openRun(
      t0,
      urns.map((urn) => [urn, false, null, t0 + 1] as [string, boolean, null, number]),
    );
    // each entry is the same size: a limit that fits ten of them exactly, and not one byte of an eleventh
    const { rows: sized } = await db.pool.query<{ ten: number }>(
      `SELECT octet_length(jsonb_agg(e)::text) AS ten
         FROM (SELECT jsonb_build_object('urn', $1::text, 'previous', NULL) AS e FROM generate_series(1, 10)) x`,
      [urns[0]],
    );
    const limits = { entities: 100, bytes: sized[0]!.ten };
    await recordRunDiffBatch(db.pool, { runId: run.runId, urns: urns.slice(0, 12), evaluatedAt: t0 + 2, limits });
    await recordRunDiffBatch(db.pool, { runId: run.runId, urns: urns.slice(12), evaluatedAt: t0 + 2, limits });
    const diff = (await findRunDiff(db.pool, run.testUrn, run.runId))!;
    expect(diff.newlyFailingCount).toBe(40);
    expect(diff.newlyFailing.map((e) => e.urn)).toEqual(urns.slice(0, 10));
  });

  it("reads each entity's states along the pair's index, not by walking the history's times", async () => {
    const firstRun = Date.now() - 7 * 86_400_000;
    // Statistics that saw only other tests' recent history.
    await db.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       SELECT $1, 'urn:li:test:other' || i, true, NULL, now() - interval '10 minutes' FROM generate_series(1, 10) AS i`,
      [urnOf(0)],
    );
    await db.pool.query("ANALYZE test_result_transition");
    // This test's last run, a week ago (its results the baseline's states): each entity of the batch has one.
    const run = await openRun(firstRun + 60_000, []);
    await db.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       SELECT 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t' || lpad(i::text, 6, '0') || ',PROD)', $1, i % 2 = 0,
              NULL, $2::timestamptz
         FROM generate_series(1, 5000) AS i`,
      [run.testUrn, new Date(firstRun).toISOString()],
    );
    let sent: { text: string; values: unknown[] } | undefined;
    const recording = {
      query: (text: string, values: unknown[]) => {
        sent = { text, values };
        return db.pool.query(text, values);
      },
    } as unknown as pg.ClientBase;
    const urns = Array.from({ length: 1000 }, (_, i) => urnOf(i + 1));
    await recordRunDiffBatch(recording, { runId: run.runId, urns, evaluatedAt: Date.now(), limits: LIMITS });
    const diff = (await findRunDiff(db.pool, run.testUrn, run.runId))!;
    // their first results, at the baseline already: none new
    expect(diff).toMatchObject({ evaluated: 1000, newlyFailingCount: 0, newlyPassingCount: 0 });
    const { rows } = await db.pool.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${sent!.text}`,
      sent!.values,
    );
    const nodes = nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan);
    // The history along the pair's indexes (an index scan, or a bitmap scan of one): never its time index, nor a scan
    // of the whole table.
    const indexes = nodes.filter(
      (n) => n["Relation Name"] === "test_result_transition" || n["Index Name"]?.startsWith("test_result_transition"),
    );
    expect(indexes.length).toBeGreaterThan(0);
    for (const node of nodes
      .flatMap((n) => n["Index Name"] ?? [])
      .filter((i) => i.startsWith("test_result_transition")))
      expect(node).toMatch(/^test_result_transition_(urn_test_urn|test_urn_urn)_/);
    expect(
      nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "test_result_transition"),
    ).toEqual([]);
  });
});
