import {
  pushedTestResults,
  readTestResults,
  type EntityEvaluation,
  type EntitySnapshot,
  type ParsedDefinition,
} from "@mdp/metadata-tests";

/** The aspect a push writes (here rather than beside ResultsPusher, whose imports the evaluation thread must not load). */
export const TEST_RESULTS_ASPECT = "testResults";

/**
 * runTest's push of a batch, merged in the evaluation thread that evaluated it: the thread has the batch's entities
 * parsed already, their stored testResults among their aspects, so it merges each evaluation onto those
 * (pushedTestResults, the merge every push makes) and answers the values to write as JSON text. The main thread then
 * only writes: no structured clone of a thousand evaluations with their failed rules, and no merge or serialization
 * of results on the event loop every other job of the worker shares (ResultsPusher.pushMerged writes what this
 * answers).
 */

/** What a thread item that pushes brings for the merge (ThreadItem.merge), read with the batch under its locks. */
export interface PushMerge {
  /** what each test named in the stored results, or evaluated, selects, one JSON text `{testUrn: [type]}` (EntityBatch.onTypes) */
  onTypes: string;
}

/** A batch's push, merged (the thread's answer to an item with `merge`). */
export interface MergedBatch {
  /** the entities whose testResults change, in urn order: urn, entity type and the new value as JSON text */
  writes: { urns: string[]; entityTypes: string[]; values: string[] };
  /** each evaluated test's result as stored after the push, where it has one (the result history's input) */
  results: { urns: string[]; tests: string[]; passing: boolean[] };
  /** the entities an evaluated test passed or failed (a run diff's batch) */
  decided: string[];
  /** how many entities have a passing, a failing, a not-applicable result (a run's progress) */
  entities: EntityCounts;
  /** the evaluations as objects, only when an evaluated test has actions: the push runs them (test-actions.ts) */
  evaluations?: EntityEvaluation[];
}

export interface EntityCounts {
  passing: number;
  failing: number;
  notApplicable: number;
}

/** How many of these evaluations have a passing, a failing, a not-applicable result. */
export function entityCounts(evaluations: readonly EntityEvaluation[]): EntityCounts {
  const counts = { passing: 0, failing: 0, notApplicable: 0 };
  for (const e of evaluations) {
    if (e.passing.length > 0) counts.passing++;
    if (e.failing.length > 0) counts.failing++;
    if (e.notApplicable.length > 0) counts.notApplicable++;
  }
  return counts;
}

/**
 * The push of these evaluations (one per entity, in urn order) of the `evaluated` tests, merged onto each entity's
 * stored testResults (`entityOf`: the batch's snapshot, read under its locks). A result stands while its test exists
 * and its on.types select the entity's type, as read with the batch (`merge.onTypes`): a test deleted, or edited away
 * from the type, before the batch was read loses its entries with the entity's next write (one deleted during the
 * batch, with the next batch's).
 */
export function mergeBatch(
  evaluations: readonly EntityEvaluation[],
  entityOf: (urn: string) => EntitySnapshot,
  evaluated: ReadonlySet<string>,
  merge: PushMerge,
  /** the evaluated tests' definitions: whether one has actions */
  definitions: readonly ParsedDefinition[],
): MergedBatch {
  const onTypes = new Map(Object.entries(JSON.parse(merge.onTypes) as Record<string, string[] | null>));
  const batch: MergedBatch = {
    writes: { urns: [], entityTypes: [], values: [] },
    results: { urns: [], tests: [], passing: [] },
    decided: [],
    entities: entityCounts(evaluations),
  };
  for (const evaluation of evaluations) {
    const urn = evaluation.urn;
    const entity = entityOf(urn);
    const entityType = entity.entityType;
    const stands = (test: string) => onTypes.get(test)?.includes(entityType) ?? false;
    const stored = entity.aspects[TEST_RESULTS_ASPECT];
    const before = stored === undefined ? undefined : readTestResults(stored);
    const pushed = pushedTestResults(before, evaluated, evaluation, stands);
    if (pushed.changed) {
      batch.writes.urns.push(urn);
      batch.writes.entityTypes.push(entityType);
      batch.writes.values.push(pushed.json);
    }
    for (const test of evaluated) {
      const passing = pushed.after.passing.some((r) => r.test === test);
      if (!passing && !pushed.after.failing.some((r) => r.test === test)) continue;
      batch.results.urns.push(urn);
      batch.results.tests.push(test);
      batch.results.passing.push(passing);
    }
    if (evaluation.passing.length + evaluation.failing.length > 0) batch.decided.push(urn);
  }
  const actions = definitions.some((d) => (d.actions?.passing.length ?? 0) + (d.actions?.failing.length ?? 0) > 0);
  if (actions) batch.evaluations = [...evaluations];
  return batch;
}
