import { insertAuditEvents, type AspectRepository, type AuditEventInput, type VersionedAspectWrite } from "@mdp/db";
import { actionRunsOf, actionsFromJson, aspectOfAction, planActions, type TestActions } from "@mdp/metadata-tests";
import type pg from "pg";
import type { PushItem } from "./results.pusher";

/** The audit action of a test's actions that changed an entity (docs/audit.md). */
export const TEST_ACTIONS_AUDIT = "test.actions";

/**
 * Runs the actions of pushed results (libs/metadata-tests test-actions.ts plans them) inside the push's transaction:
 * the aspects they write (globalTags, glossaryTerms, ownership, domains, deprecation) are locked, read, changed and
 * written as new versions through the aspect store ingestion uses, and each test that changed an entity leaves an
 * audit row, all committing or rolling back with the results. The tests' actions are read in the same transaction, so
 * a test deleted, or edited away from the entity's type, while the evaluation ran takes no action. Aspects whose
 * content would not change get no version (re-running writes nothing). Answers how many aspect versions it wrote.
 */
export async function applyTestActions(
  client: pg.ClientBase,
  aspects: AspectRepository,
  items: readonly PushItem[],
): Promise<number> {
  const tests = new Set(items.flatMap((i) => [...i.evaluation.passing, ...i.evaluation.failing].map((r) => r.test)));
  if (tests.size === 0) return 0;
  const { rows } = await client.query<{ urn: string; on_types: string[]; actions: unknown }>(
    `SELECT urn, on_types, definition->'actions' AS actions
       FROM metadata_test WHERE urn = ANY($1::text[]) AND definition ? 'actions'`,
    [[...tests]],
  );
  if (rows.length === 0) return 0;
  // Re-validated rather than cast, as the evaluation's own parse of the definition was.
  const stored = new Map(rows.map((r) => [r.urn, { onTypes: r.on_types, actions: actionsFromJson(r.actions) }]));

  // One entry per entity: items for the same entity (two requests in one job) apply in order, a later outcome of a
  // test replacing an earlier one.
  const entities = new Map<string, { item: PushItem; outcomes: Map<string, "passing" | "failing"> }>();
  for (const item of items) {
    const entry = entities.get(item.evaluation.urn) ?? { item, outcomes: new Map() };
    entry.item = item;
    for (const r of item.evaluation.passing) entry.outcomes.set(r.test, "passing");
    for (const r of item.evaluation.failing) entry.outcomes.set(r.test, "failing");
    entities.set(item.evaluation.urn, entry);
  }
  const plans = [...entities.values()].flatMap(({ item, outcomes }) => {
    const actionsOf = (test: string): TestActions | undefined => {
      const found = stored.get(test);
      return found?.onTypes.includes(item.entityType) ? found.actions : undefined;
    };
    const results = { passing: [] as Array<{ test: string }>, failing: [] as Array<{ test: string }> };
    for (const [test, outcome] of outcomes) results[outcome].push({ test });
    const runs = actionRunsOf(results, actionsOf);
    return runs.length > 0 ? [{ item, runs }] : [];
  });
  if (plans.length === 0) return 0;

  const needed = plans.flatMap(({ item, runs }) =>
    runs.flatMap((run) => run.actions.map((a) => ({ urn: item.evaluation.urn, aspectName: aspectOfAction(a.type) }))),
  );
  // Locked before they are read, in the aspect store's one order: a concurrent ingestion of the same aspect waits.
  await aspects.lock(client, needed);
  const current = await latestAspects(client, needed);
  const time = Date.now();
  const writes: VersionedAspectWrite[] = [];
  const audit: AuditEventInput[] = [];
  for (const { item, runs } of plans) {
    const urn = item.evaluation.urn;
    const plan = planActions(current.get(urn) ?? {}, runs, time);
    for (const write of plan.writes) {
      writes.push({
        urn,
        entityType: item.entityType,
        aspectName: write.aspect,
        valueJson: JSON.stringify(write.value),
        createdBy: item.actorUrn,
        createdVia: item.actorTokenId ?? null,
      });
    }
    // One row per test that changed the entity, naming the test and what it changed.
    for (const run of runs) {
      const changed = plan.actions.filter((a) => a.test === run.test && a.outcome === run.outcome && a.wouldChange);
      if (changed.length === 0) continue;
      audit.push({
        actorUrn: item.actorUrn,
        action: TEST_ACTIONS_AUDIT,
        targetUrn: urn,
        details: {
          test: run.test,
          outcome: run.outcome,
          actions: changed.map(({ type, params, aspect }) => ({ type, params, aspect })),
          via: "test-action",
        },
      });
    }
  }
  await aspects.upsert(client, writes, "system");
  await insertAuditEvents(client, audit);
  return writes.length;
}

/** The latest value of each (urn, aspect) asked for, by urn then aspect name. */
async function latestAspects(
  client: pg.ClientBase,
  wanted: ReadonlyArray<{ urn: string; aspectName: string }>,
): Promise<Map<string, Record<string, unknown>>> {
  const keys = [...new Map(wanted.map((w) => [`${w.urn}\u0000${w.aspectName}`, w])).values()];
  const { rows } = await client.query<{ urn: string; aspect_name: string; value: unknown }>(
    `SELECT DISTINCT ON (a.urn, a.aspect_name) a.urn, a.aspect_name, a.value
       FROM unnest($1::text[], $2::text[]) AS k(urn, aspect_name)
       JOIN aspect a ON a.urn = k.urn AND a.aspect_name = k.aspect_name
      ORDER BY a.urn, a.aspect_name, a.version DESC`,
    [keys.map((k) => k.urn), keys.map((k) => k.aspectName)],
  );
  const byUrn = new Map<string, Record<string, unknown>>();
  for (const row of rows) {
    const aspects = byUrn.get(row.urn) ?? {};
    aspects[row.aspect_name] = row.value;
    byUrn.set(row.urn, aspects);
  }
  return byUrn;
}
