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
  testResultsOf,
  type EntitySnapshot,
  type TestToRun,
} from "@mdp/metadata-tests";

export interface BatchTask {
  /** the batch's entities, as the batch read gives them: one JSON text */
  json: string;
  /** the results' evaluatedAt */
  at: number;
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
  for (const entity of JSON.parse(task.json) as EntitySnapshot[]) {
    const evaluation = evaluateEntity([test], entity, task.at, true);
    // As a push: an entity the test did not apply to has no result to store.
    if (evaluation.passing.length + evaluation.failing.length === 0) continue;
    results.urns.push(entity.urn);
    results.types.push(entity.entityType);
    results.values.push(boundedTestResults(testResultsOf(evaluation)).json);
    results.passing.push(evaluation.passing.length > 0);
  }
  return results;
}
