/**
 * What evaluating-worker.ts's threads run (IN_THREADS=1; loaded through evaluating-thread.cjs): the job's evaluations,
 * once per request, of the tests the pool handed every thread at its start (workerData, parsed once here), against the
 * entity read on the main thread and passed as its JSON text (one string copy, parsed here). The answer crosses back as
 * a structured clone of the evaluations, which the main thread returns as the job's value, as the in-process floor does.
 */
import { workerData } from "node:worker_threads";
import { definitionFromJson, evaluateEntity, type EntityEvaluation, type EntitySnapshot } from "@mdp/metadata-tests";

export interface FloorTask {
  urn: string;
  /** the entity's latest aspects, as evaluating-worker.ts's read gives them: one JSON text */
  aspectsJson: string;
  /** the results' evaluatedAt */
  at: number;
  /** the requests the job carries: one evaluation each */
  requests: number;
}

const tests = (workerData as { tests: { urn: string; definition: unknown }[] }).tests.map((t) => ({
  urn: t.urn,
  definition: definitionFromJson(t.definition),
}));

/** null: a probe, answered once the thread has loaded its modules and parsed the tests. */
export default function evaluateFloorTask(task: FloorTask | null): EntityEvaluation[] {
  if (task === null) return [];
  const aspects = JSON.parse(task.aspectsJson) as { entityType: string; aspect: string; value: unknown }[];
  const entity: EntitySnapshot = { urn: task.urn, entityType: aspects[0]!.entityType, aspects: {} };
  for (const a of aspects) entity.aspects[a.aspect] = a.value;
  return Array.from({ length: task.requests }, () => evaluateEntity(tests, entity, task.at, true));
}
