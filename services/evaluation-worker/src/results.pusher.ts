import type { AspectRepository, VersionedAspectWrite } from "@mdp/db";
import {
  mergeTestResults,
  readTestResults,
  sameJson,
  testResultsOf,
  type EntityEvaluation,
  type TestResultsAspect,
} from "@mdp/metadata-tests";
import type pg from "pg";

export const TEST_RESULTS_ASPECT = "testResults";

/** One entity's evaluation to store, with the tests that were evaluated (including those that did not apply). */
export interface PushItem {
  entityType: string;
  evaluation: EntityEvaluation;
  evaluated: ReadonlySet<string>;
  /** who asked for the push: the new version's created_by */
  actorUrn: string;
}

/**
 * Stores evaluations as each entity's `testResults` aspect, merged with the results of other tests stored earlier.
 * Read, merge and write happen inside the caller's transaction under the aspect's write lock, so two pushes for one
 * entity at the same moment serialize and neither loses the other's results. Items for the same entity (two requests
 * in one job) are merged in order, each onto the one before. Results equal to what is stored write no new version.
 */
export class ResultsPusher {
  constructor(private readonly aspects: AspectRepository) {}

  /** Returns how many new testResults versions were written. */
  async push(client: pg.ClientBase, items: readonly PushItem[]): Promise<number> {
    if (items.length === 0) return 0;
    const urns = [...new Set(items.map((i) => i.evaluation.urn))];
    await this.aspects.lock(
      client,
      urns.map((urn) => ({ urn, aspectName: TEST_RESULTS_ASPECT })),
    );
    const stored = await this.aspects.latestOfEach(client, TEST_RESULTS_ASPECT, urns);
    const current = new Map([...stored].map(([urn, value]) => [urn, readTestResults(value)]));
    const existing = await this.existingTests(client, current);
    // Tests evaluated in this job exist too: without them, a result an earlier request of the same job added for an
    // entity would be dropped as "deleted" when a later request's results are merged onto it.
    for (const item of items) for (const test of item.evaluated) existing.add(test);
    const writes: VersionedAspectWrite[] = [];
    for (const item of items) {
      const urn = item.evaluation.urn;
      const before = current.get(urn);
      const after = mergeTestResults(
        before ?? { passing: [], failing: [] },
        item.evaluated,
        testResultsOf(item.evaluation),
        (test) => existing.has(test),
      );
      // Unchanged results write nothing; nor does an entity no test has results for (nothing applied to it).
      const unchanged = before ? sameJson(before, after) : after.passing.length + after.failing.length === 0;
      if (unchanged) continue;
      current.set(urn, after);
      writes.push({
        urn,
        entityType: item.entityType,
        aspectName: TEST_RESULTS_ASPECT,
        valueJson: JSON.stringify(after),
        createdBy: item.actorUrn,
      });
    }
    await this.aspects.upsert(client, writes, "system");
    return writes.length;
  }

  /**
   * Which of the tests that stored results mention still exist: results of a deleted test are dropped when the
   * entity's results are next written, rather than claiming forever that it passes.
   */
  private async existingTests(client: pg.ClientBase, stored: Map<string, TestResultsAspect>): Promise<Set<string>> {
    const mentioned = new Set<string>();
    for (const results of stored.values()) {
      for (const entry of [...results.passing, ...results.failing]) mentioned.add(entry.test);
    }
    if (mentioned.size === 0) return mentioned;
    const { rows } = await client.query<{ urn: string }>("SELECT urn FROM metadata_test WHERE urn = ANY($1::text[])", [
      [...mentioned],
    ]);
    return new Set(rows.map((r) => r.urn));
  }
}
