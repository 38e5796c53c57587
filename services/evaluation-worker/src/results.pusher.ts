import { onTypesOfTests, type AspectRepository, type OwnerPrivileges, type VersionedAspectWrite } from "@mdp/db";
import { pushedTestResults, readTestResults, type EntityEvaluation, type TestResultsAspect } from "@mdp/metadata-tests";
import type pg from "pg";
import { TEST_RESULTS_ASPECT, type MergedBatch } from "./batch-push";
import { applyTestActions, type UnsavedTestActions } from "./test-actions";
import { TestResultHistory } from "./test-result-history";

export { TEST_RESULTS_ASPECT };

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

  /** Returns how many new testResults versions were written. */
  async push(client: pg.ClientBase, items: readonly PushItem[]): Promise<number> {
    if (items.length === 0) return 0;
    const urns = [...new Set(items.map((i) => i.evaluation.urn))];
    await this.aspects.lock(
      client,
      urns.map((urn) => ({ urn, aspectName: TEST_RESULTS_ASPECT })),
    );
    const stored = await this.aspects.latestOfEach(client, TEST_RESULTS_ASPECT, urns);
    const current = new Map<string, TestResultsAspect>();
    for (const [urn, value] of stored) current.set(urn, readTestResults(value));
    const selects = await this.testsSelecting(client, current, items);
    const writes: VersionedAspectWrite[] = [];
    for (const item of items) {
      const urn = item.evaluation.urn;
      // A result stands while its test exists and its on.types still select the entity's type.
      const stands = (test: string) => selects.get(test)?.includes(item.entityType) ?? false;
      const pushed = pushedTestResults(current.get(urn), item.evaluated, item.evaluation, stands);
      if (!pushed.changed) continue;
      current.set(urn, pushed.after);
      writes.push({
        urn,
        entityType: item.entityType,
        aspectName: TEST_RESULTS_ASPECT,
        valueJson: pushed.json,
        createdBy: item.actorUrn,
        createdVia: item.actorTokenId ?? null,
      });
    }
    // Every written urn's lock is held: taken above.
    await this.aspects.upsert(client, writes, "system", null, null, true);
    // The results' actions, in this transaction, as far as their owners and the push's caller may write them
    // (test-actions.ts).
    await applyTestActions(client, this.aspects, items, this.ownerPrivileges);
    await this.history.record(client, items, current);
    return writes.length;
  }

  /**
   * Writes a batch's push that its evaluation thread merged (batch-push.ts; runTest): the caller holds the batch's
   * locks and read, under them, what the thread merged onto and its `versions`, in this transaction. As `push`: the
   * changed testResults, then the actions of `actionItems` (the batch's evaluations as items, when the thread answered
   * them: an evaluated test has actions), then the history. Returns how many new testResults versions were written.
   */
  async pushMerged(
    client: pg.ClientBase,
    merged: MergedBatch,
    by: { actorUrn: string; actorTokenId?: string | undefined },
    versions: ReadonlyMap<string, number>,
    evaluatedAt: number,
    actionItems: readonly PushItem[] = [],
  ): Promise<number> {
    const { urns, entityTypes, values } = merged.writes;
    const writes: VersionedAspectWrite[] = urns.map((urn, i) => ({
      urn,
      entityType: entityTypes[i]!,
      aspectName: TEST_RESULTS_ASPECT,
      valueJson: values[i]!,
      createdBy: by.actorUrn,
      createdVia: by.actorTokenId ?? null,
      currentVersion: versions.get(urn) ?? 0,
    }));
    await this.aspects.upsert(client, writes, "system", null, null, true);
    if (actionItems.length > 0) await applyTestActions(client, this.aspects, actionItems, this.ownerPrivileges);
    const { results } = merged;
    await this.history.recordResults(
      client,
      results.urns.map((urn, i) => ({ urn, test: results.tests[i]!, passing: results.passing[i]!, at: evaluatedAt })),
    );
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
