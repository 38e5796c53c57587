import { onTypesOfTests, type AspectRepository, type OwnerPrivileges, type VersionedAspectWrite } from "@mdp/db";
import {
  boundedTestResults,
  mergeTestResults,
  readTestResults,
  sameResultsOf,
  testResultsOf,
  type EntityEvaluation,
  type TestResultsAspect,
} from "@mdp/metadata-tests";
import type pg from "pg";
import { applyTestActions, type UnsavedTestActions } from "./test-actions";
import { TestResultHistory } from "./test-result-history";

export const TEST_RESULTS_ASPECT = "testResults";

/** One entity's evaluation to store, with the tests that were evaluated (including those that did not apply). */
export interface PushItem {
  entityType: string;
  evaluation: EntityEvaluation;
  evaluated: ReadonlySet<string>;
  /** who asked for the push: the new version's created_by */
  actorUrn: string;
  /** the access token it asked through (the new version's created_via); absent: none */
  actorTokenId?: string;
}

/**
 * Stores evaluations as each entity's `testResults` aspect, merged with the results of other tests stored earlier.
 * Read, merge and write happen inside the caller's transaction under the aspect's write lock, so two pushes for one
 * entity at the same moment serialize and neither loses the other's results. Items for the same entity (two requests
 * in one job) are merged in order, each onto the one before. Results equal to what is stored write no new version.
 */
export class ResultsPusher {
  /** the aspect `lock` locks (a batch read under its locks reads it for the push: EvaluationStore.nextBatch) */
  readonly lockedAspect = TEST_RESULTS_ASPECT;

  constructor(
    private readonly aspects: AspectRepository,
    /** what a principal (a test's owner, a push's caller) may use now, read afresh at each push that runs actions */
    private readonly ownerPrivileges: OwnerPrivileges,
    /** the pass/fail transitions of what is pushed, kept in the same transaction (test-result-history.ts) */
    private readonly history = new TestResultHistory(),
  ) {}

  /**
   * Takes the testResults write locks of these entities until the caller's transaction ends (the lock push takes): a
   * caller that reads entities, evaluates them and pushes in one transaction locks before it reads.
   */
  async lock(client: Pick<pg.ClientBase, "query">, urns: readonly string[]): Promise<void> {
    await this.aspects.lock(
      client as pg.ClientBase,
      urns.map((urn) => ({ urn, aspectName: TEST_RESULTS_ASPECT })),
    );
  }

  /**
   * Returns how many new testResults versions were written. `locked`: the caller already holds these entities' locks
   * (`lock`, in this transaction) and read their stored testResults after taking them (runTest's batch read brings
   * them: see nextBatch), so the push neither locks nor reads them again: they cannot have changed since. With their
   * `versions` (read with them; an entity absent has none), the upsert does not look the latest versions up either.
   */
  async push(
    client: pg.ClientBase,
    items: readonly PushItem[],
    locked?: { stored: ReadonlyMap<string, unknown>; versions?: ReadonlyMap<string, number> },
  ): Promise<number> {
    if (items.length === 0) return 0;
    let stored = locked?.stored;
    if (!stored) {
      const urns = [...new Set(items.map((i) => i.evaluation.urn))];
      await this.aspects.lock(
        client,
        urns.map((urn) => ({ urn, aspectName: TEST_RESULTS_ASPECT })),
      );
      stored = await this.aspects.latestOfEach(client, TEST_RESULTS_ASPECT, urns);
    }
    const current = new Map<string, TestResultsAspect>();
    for (const [urn, value] of stored) current.set(urn, readTestResults(value));
    const selects = await this.testsSelecting(client, current, items);
    const writes: VersionedAspectWrite[] = [];
    for (const item of items) {
      const urn = item.evaluation.urn;
      const before = current.get(urn);
      // A result stands while its test exists and its on.types still select the entity's type: a test deleted, or
      // edited away from this type, since (even while this job ran) loses its entry.
      const stands = (test: string) => selects.get(test)?.includes(item.entityType) ?? false;
      const evaluated = testResultsOf(item.evaluation);
      const merged = mergeTestResults(
        before ?? { passing: [], failing: [] },
        item.evaluated,
        {
          passing: evaluated.passing.filter((r) => stands(r.test)),
          failing: evaluated.failing.filter((r) => stands(r.test)),
        },
        stands,
      );
      // Within RESULT_LIMITS.entityBytes whatever other tests' entries it keeps (their values go first, see there).
      const { value: after, json } = boundedTestResults(merged);
      // Results of the evaluated tests unchanged write nothing, whatever else differs (an entry of a test deleted or
      // edited away since is dropped only with a write that happens anyway: an unrelated push never rewrites every
      // entity a deleted test had results on); nor does an entity no test has results for (nothing applied to it).
      const unchanged = before
        ? sameResultsOf(before, after, item.evaluated)
        : after.passing.length + after.failing.length === 0;
      if (unchanged) continue;
      current.set(urn, after);
      writes.push({
        urn,
        entityType: item.entityType,
        aspectName: TEST_RESULTS_ASPECT,
        valueJson: json,
        createdBy: item.actorUrn,
        createdVia: item.actorTokenId ?? null,
        ...(locked?.versions && { currentVersion: locked.versions.get(urn) ?? 0 }),
      });
    }
    // Every written urn's lock is held: taken above, or by the caller (`locked`).
    await this.aspects.upsert(client, writes, "system", null, null, true);
    // The results' actions, in this transaction, as far as their owners and the push's caller may write them
    // (test-actions.ts).
    await applyTestActions(client, this.aspects, items, this.ownerPrivileges);
    await this.history.record(client, items, current);
    return writes.length;
  }

  /**
   * runTestDefinition's DEFAULT mode: applies an unsaved definition's actions (`tests`, acting for the caller, who must
   * hold their privileges now) to these evaluations' entities in the caller's transaction, as a push applies a stored
   * test's. No result is stored: nothing reads the results of a test that does not exist. Answers the versions written.
   */
  applyUnsavedActions(
    client: pg.ClientBase,
    items: readonly PushItem[],
    tests: ReadonlyMap<string, UnsavedTestActions>,
  ): Promise<number> {
    if (tests.size === 0) return Promise.resolve(0);
    return applyTestActions(client, this.aspects, items, this.ownerPrivileges, tests);
  }

  /**
   * The entity types each test that stored results mention, or this job evaluated, selects now (its on.types), read
   * inside the push's transaction: a test that no longer exists is absent. Results of a deleted test are dropped when
   * the entity's results are next written, rather than claiming forever that it passes.
   */
  private async testsSelecting(
    client: pg.ClientBase,
    stored: Map<string, TestResultsAspect>,
    items: readonly PushItem[],
  ): Promise<Map<string, string[]>> {
    const mentioned = new Set<string>();
    for (const results of stored.values()) {
      for (const entry of results.passing) mentioned.add(entry.test);
      for (const entry of results.failing) mentioned.add(entry.test);
    }
    for (const item of items) for (const test of item.evaluated) mentioned.add(test);
    if (mentioned.size === 0) return new Map();
    return onTypesOfTests(client, [...mentioned]);
  }
}
