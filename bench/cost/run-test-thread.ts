/**
 * What run-test-floor.ts's threads run (IN_THREADS=1; loaded through run-test-thread.cjs): one batch's evaluation, of
 * the test handed every thread at its start (workerData), against the batch's entities as the JSON text read (one
 * string copy, parsed here), answering each applicable result's testResults JSON text (strings cross back cheaply).
 */
import { workerData } from "node:worker_threads";
import {
  boundedTestResults,
  definitionFromJson,
  evaluateEntity,
  pushedTestResults,
  readTestResults,
  testResultsOf,
  type EntitySnapshot,
  type TestToRun,
} from "@mdp/metadata-tests";

export interface BatchTask {
  /** the batch's entities, as the batch read gives them: one JSON text */
  json: string;
  /** the results' evaluatedAt */
  at: number;
  /**
   * to merge (IN_THREADS=1): the on.types of the tests the batch's stored testResults name and of the floor's test
   * `{testUrn: [type]}`, as the batch read gives them; each result is then merged onto the entity's stored testResults
   * (among its aspects) as the product's push merges it (pushedTestResults), and only a change is written
   */
  merge?: { onTypes: string };
}

export interface BatchResults {
  urns: string[];
  types: string[];
  /** testResults JSON texts */
  values: string[];
  passing: boolean[];
}

/** The test as a thread gets it (workerData), parsed at its first task. */
let threadTest: TestToRun | undefined;

/** null: a probe, answered once the thread has loaded its modules and parsed the test. */
export default function evaluateBatch(task: BatchTask | null): BatchResults {
  const stored = (workerData as { test: { urn: string; definition: unknown } }).test;
  threadTest ??= { urn: stored.urn, definition: definitionFromJson(stored.definition) };
  return task === null ? { urns: [], types: [], values: [], passing: [] } : batchResults(threadTest, task);
}

/** The batch's applicable results, in its order (the in-process floor calls it on its main thread). */
export function batchResults(test: TestToRun, task: BatchTask): BatchResults {
  const results: BatchResults = { urns: [], types: [], values: [], passing: [] };
  const onTypes = task.merge && new Map(Object.entries(JSON.parse(task.merge.onTypes) as Record<string, string[]>));
  const evaluated = new Set([test.urn]);
  for (const entity of JSON.parse(task.json) as EntitySnapshot[]) {
    const evaluation = evaluateEntity([test], entity, task.at, true);
    let value: string;
    if (onTypes) {
      const stands = (urn: string) => onTypes.get(urn)?.includes(entity.entityType) ?? false;
      const stored = entity.aspects.testResults;
      const before = stored === undefined ? undefined : readTestResults(stored);
      const pushed = pushedTestResults(before, evaluated, evaluation, stands);
      if (!pushed.changed) continue;
      value = pushed.json;
    } else {
      // As a push: an entity the test did not apply to has no result to store.
      if (evaluation.passing.length + evaluation.failing.length === 0) continue;
      value = boundedTestResults(testResultsOf(evaluation)).json;
    }
    results.urns.push(entity.urn);
    results.types.push(entity.entityType);
    results.values.push(value);
    results.passing.push(evaluation.passing.length > 0);
  }
  return results;
}
