import type pg from "pg";
import { SYSTEM_ACTOR_URN } from "@mdp/core";
import { testResultFlipEventInsert } from "../events/entity-change-events";
import type { PrismaClient, TestResultTransition } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The test_result_transition table: per (entity, test), the first pushed result and every change after it. Written
 * by the evaluation worker inside a push's transaction (plain pg), pruned by its retention, read by the gateway's
 * testResultHistory.
 */

/** One pushed result to compare with its pair's last transition. */
export interface PushedResult {
  urn: string;
  test: string;
  passing: boolean;
  /** epoch ms */
  at: number;
}

/**
 * Inserts a transition for each result that differs from its pair's last recorded one (or is its first), at the
 * later of its time and that row's (times never go backwards within a pair), and a TEST_RESULT platform event for
 * each that flips between pass and fail (not a first result), in the same statement; answers how many pairs got a
 * row. The same statement trims each pair that got one to its newest `maxPerPair` rows (the oldest go): the new row
 * is its pair's newest (its time is the pair's latest or later, its id the highest), so the pair keeps it and its
 * newest `maxPerPair - 1` earlier rows, read from the statement's snapshot (each trim reads the pair's index past
 * them). One statement and no rows back per batch, where an insert answering its pairs and a trim of them took two.
 */
export async function insertTransitions(
  client: Pick<pg.ClientBase, "query">,
  results: readonly PushedResult[],
  maxPerPair: number,
): Promise<number> {
  const { rows } = await client.query<{ written: number }>(
    `WITH input AS (
         SELECT urn, test_urn, passing, to_timestamp(at_ms / 1000.0) AS at
           FROM unnest($1::text[], $2::text[], $3::boolean[], $4::int8[]) AS i(urn, test_urn, passing, at_ms)
       ), compared AS (
         SELECT i.urn, i.test_urn, i.passing, i.at, last.passing AS previous, last.at AS previous_at
           FROM input i
           LEFT JOIN LATERAL (
             SELECT t.passing, t.at FROM test_result_transition t
              WHERE t.urn = i.urn AND t.test_urn = i.test_urn
              ORDER BY t.at DESC, t.id DESC LIMIT 1
           ) last ON true
       ), inserted AS (
         INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
         SELECT urn, test_urn, passing, previous, GREATEST(at, previous_at) FROM compared
          WHERE previous IS DISTINCT FROM passing
         RETURNING urn, test_urn, passing, previous, at
       ), flipped AS (${testResultFlipEventInsert("inserted", SYSTEM_ACTOR_URN)}
       ), trimmed AS (
         DELETE FROM test_result_transition t
          USING (
            SELECT old.id FROM compared c
            CROSS JOIN LATERAL (
              SELECT x.id FROM test_result_transition x
               WHERE x.urn = c.urn AND x.test_urn = c.test_urn
               ORDER BY x.at DESC, x.id DESC OFFSET $5::int - 1
            ) old
             WHERE c.previous IS NOT NULL AND c.previous IS DISTINCT FROM c.passing
          ) d
         WHERE t.id = d.id
       )
       SELECT count(*)::int AS written FROM inserted`,
    [
      results.map((r) => r.urn),
      results.map((r) => r.test),
      results.map((r) => r.passing),
      // epoch ms as numbers: an ISO text per result cost the worker's main thread more than the rest of the arguments
      results.map((r) => r.at),
      maxPerPair,
    ],
  );
  return rows[0]!.written;
}

/**
 * Deletes up to `limit` transitions older than `retentionDays`, except the latest of each pair whose test still
 * exists; rows another pruner holds are skipped (SKIP LOCKED), not waited for. Answers how many went.
 */
export async function pruneTransitions(db: Queryable, retentionDays: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM test_result_transition WHERE id IN (
             SELECT t.id FROM test_result_transition t
              WHERE t.at < now() - make_interval(days => $1)
                AND (
                  EXISTS (SELECT 1 FROM test_result_transition n
                           WHERE n.urn = t.urn AND n.test_urn = t.test_urn AND (n.at, n.id) > (t.at, t.id))
                  OR NOT EXISTS (SELECT 1 FROM metadata_test m WHERE m.urn = t.test_urn)
                )
              LIMIT $2
              FOR UPDATE SKIP LOCKED)`,
    [retentionDays, limit],
  );
  return rowCount ?? 0;
}

/** A page of one pair's transitions, newest first, and how many it has: both in one transaction. */
export async function transitionPage(
  prisma: PrismaClient,
  pair: { urn: string; testUrn: string },
  skip: number,
  take: number,
): Promise<{ total: number; rows: TestResultTransition[] }> {
  const [rows, counted] = await prisma.$transaction([
    prisma.testResultTransition.findMany({
      where: { urn: pair.urn, testUrn: pair.testUrn },
      orderBy: [{ at: "desc" }, { id: "desc" }],
      skip,
      take,
    }),
    prisma.$queryRaw<Array<{ total: number }>>`
        SELECT count(*)::int AS total FROM test_result_transition WHERE urn = ${pair.urn} AND test_urn = ${pair.testUrn}`,
  ]);
  return { total: counted[0]?.total ?? 0, rows };
}

/** How many entities a test's pushed results say pass and fail now. */
export interface TestResultCounts {
  passing: number;
  failing: number;
}

/**
 * Test.results (DataHub's TestResultsSummary): of the entities this test has pushed results for, how many pass and
 * fail it now, from each pair's latest transition (the state it was last pushed in; retention always keeps that row
 * while the test exists). Entities whose type the test no longer selects are left out, as their stored results are
 * hidden (standing results). One index range scan of the test's transitions (`test_urn, urn, at, id`).
 */
export async function testResultCounts(db: Queryable, testUrn: string): Promise<TestResultCounts> {
  const { rows } = await db.query<TestResultCounts>(
    `SELECT count(*) FILTER (WHERE last.passing)::int AS passing, count(*) FILTER (WHERE NOT last.passing)::int AS failing
       FROM (SELECT DISTINCT ON (t.urn) t.urn, t.passing FROM test_result_transition t
              WHERE t.test_urn = $1 ORDER BY t.urn, t.at DESC, t.id DESC) last
       JOIN metadata_test m ON m.urn = $1
      WHERE split_part(last.urn, ':', 3) = ANY(m.on_types)`,
    [testUrn],
  );
  return rows[0] ?? { passing: 0, failing: 0 };
}
