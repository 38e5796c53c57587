import type pg from "pg";
import { METADATA_CHANGE_LOG } from "@mdp/core";
import { latestAspectsOfEntities, TEST_ACTIONS_APP_SOURCE, type PlatformEventRow } from "@mdp/db";
import type { EntitySnapshot } from "@mdp/metadata-tests";
import type { RateLimits } from "@mdp/queues";
import type { EvaluateDeps } from "./evaluation-deps";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import type { StoredTest } from "./evaluation.store";
import { TEST_RESULTS_ASPECT, type PushItem } from "./results.pusher";

/**
 * The entities whose aspects changed (each once, with its type and latest change's position), and the tests whose
 * definition changed. A push of results (testResults) is not a change tests read: evaluating again on it would only
 * find the same results. What tests' actions wrote is not evaluated again either: actions that undo each other
 * would loop forever.
 */
export function changesOf(
  events: readonly PlatformEventRow[],
  storable: (entityType: string) => boolean,
): {
  changed: Map<string, { type: string; seq: string }>;
  edited: Set<string>;
} {
  const changed = new Map<string, { type: string; seq: string }>();
  const edited = new Set<string>();
  for (const event of events) {
    // Only aspect writes change what tests read: an EntityChangeEvent_v1 (a token, a task, a result flipping, a
    // suspension) is the service telling of its own work, and a flip evaluated again would find the same results.
    if (event.eventType !== METADATA_CHANGE_LOG) continue;
    if (event.entityType === "test" && event.aspectName === "testInfo") edited.add(event.entityUrn);
    else if (
      event.aspectName !== TEST_RESULTS_ASPECT &&
      event.appSource !== TEST_ACTIONS_APP_SOURCE &&
      storable(event.entityType)
    ) {
      changed.set(event.entityUrn, { type: event.entityType, seq: event.seq });
    }
  }
  return { changed, edited };
}

/** The entities' latest aspects, read without locks: a push merges onto what is stored when it commits. */
export async function entitySnapshots(pool: pg.Pool, urns: readonly string[]): Promise<Map<string, EntitySnapshot>> {
  const entities = new Map<string, EntitySnapshot>();
  for (const a of await latestAspectsOfEntities(pool, urns)) {
    const entity = entities.get(a.urn) ?? { urn: a.urn, entityType: a.entityType, aspects: {} };
    entity.aspects[a.aspect] = a.value;
    entities.set(a.urn, entity);
  }
  return entities;
}

/** One owner's tests evaluated on these entities in the pool, as that owner (its time charged to it): what to push. */
export async function evaluateForOwner(
  deps: Pick<EvaluateDeps, "pool" | "logger">,
  rateLimits: Pick<RateLimits, "charge"> | undefined,
  tests: StoredTest[],
  entities: ReadonlyMap<string, EntitySnapshot>,
  at: number,
): Promise<PushItem[]> {
  const { ownerUrn } = tests[0]!;
  const urns = [...entities.values()]
    .filter((e) => tests.some((t) => t.onTypes.includes(e.entityType)))
    .map((e) => e.urn);
  if (urns.length === 0) return [];
  const testUrns = tests.map((t) => t.urn);
  // One item per entity: an entity whose evaluation a limit stops is left out alone, and the pool evaluates the
  // others again (evaluation-pool.ts), rather than one slow entity costing the whole batch its results.
  const { outcomes, threadMs } = await deps.pool.evaluateTimed(
    { actor: ownerUrn, at, tests, entities },
    urns.map((urn) => ({ urns: [urn], testUrns, withValues: true })),
  );
  await rateLimits?.charge({ urn: ownerUrn }, "evaluationTime", threadMs);
  const evaluations = outcomes.flatMap((outcome) =>
    outcome instanceof EvaluationLimitError || outcome instanceof StoredDefinitionError ? [] : outcome,
  );
  const stopped = outcomes.flatMap((outcome, i) => (Array.isArray(outcome) ? [] : [{ urn: urns[i]!, outcome }]));
  if (stopped.length > 0) {
    // Nothing a later pass could change: these entities' results stay as they were, the others' are pushed.
    deps.logger.warn(
      { owner: ownerUrn, tests: testUrns, entities: stopped.slice(0, 10).map((s) => s.urn), left: stopped.length },
      `evaluation on change left out: ${stopped[0]!.outcome.message}`,
    );
  }
  const evaluated = new Set(testUrns);
  return evaluations.map((evaluation) => ({
    entityType: entities.get(evaluation.urn)!.entityType,
    evaluation,
    evaluated,
    // As a scheduled run's: written by the owner, through no token of a caller (the test's actions are still
    // bounded by the token the owner set the test with, test-actions.ts).
    actorUrn: ownerUrn,
  }));
}
