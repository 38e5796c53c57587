import type { Privilege } from "@mdp/core";
import {
  AuditBudget,
  insertAuditEvents,
  ownerKey,
  testActionsOf,
  TEST_ACTIONS_APP_SOURCE,
  type AspectRepository,
  type AuditEventInput,
  type OwnerPrivileges,
  type VersionedAspectWrite,
  type WorkOwner,
} from "@mdp/db";
import {
  actionRunsOf,
  actionsFromJson,
  aspectOfAction,
  planActions,
  privilegeOfAction,
  privilegesLacking,
  withoutRefused,
  type ActionRun,
  type TestActions,
} from "@mdp/metadata-tests";
import type pg from "pg";
import type { PushItem } from "./results.pusher";

/** The audit action of a test's actions that changed an entity (docs/audit.md). */
export const TEST_ACTIONS_AUDIT = "test.actions";
/** Per process, as the budget of the queue dashboard's rows: bounds the refusal rows one actor's pushes leave. */
const REFUSAL_AUDIT_BUDGET = new AuditBudget();

/** The audit action of a test's actions left out of a push because its owner lacks their privileges (docs/audit.md). */
export const TEST_ACTIONS_REFUSED_AUDIT = "test.actions.refused";

/**
 * Runs the actions of pushed results (libs/metadata-tests test-actions.ts plans them) inside the push's transaction:
 * the aspects they write (globalTags, glossaryTerms, ownership, domains, deprecation) are locked, read, changed and
 * written as new versions through the aspect store ingestion uses, and each test that changed an entity leaves an
 * audit row, all committing or rolling back with the results. The tests' actions are read in the same transaction, so
 * a test deleted, or edited away from the entity's type, while the evaluation ran takes no action. Aspects whose
 * content would not change get no version (re-running writes nothing). Answers how many aspect versions it wrote.
 *
 * Actions write only what their test's owner may write now: each owner's grants are read afresh (`grantsOf`, once
 * per owner per push, and only when a pushed result has actions), and an action whose privilege the owner lacks is
 * left out; the results are pushed all the same. A test whose left-out actions would have changed an entity leaves
 * one `test.actions.refused` row per push, naming its owner, the missing privileges and how many entities.
 */
export async function applyTestActions(
  client: pg.ClientBase,
  aspects: AspectRepository,
  items: readonly PushItem[],
  ownerPrivileges: OwnerPrivileges,
  /** runTestDefinition's DEFAULT mode: the unsaved test's actions, instead of reading stored tests' */
  unsaved?: ReadonlyMap<string, UnsavedTestActions>,
): Promise<number> {
  const tests = new Set(items.flatMap((i) => [...i.evaluation.passing, ...i.evaluation.failing].map((r) => r.test)));
  if (tests.size === 0) return 0;
  const rows = unsaved ? [] : await testActionsOf(client, [...tests]);
  // Re-validated rather than cast, as the evaluation's own parse of the definition was.
  const stored: ReadonlyMap<string, UnsavedTestActions> =
    unsaved ??
    new Map(
      rows.map((r) => [
        r.urn,
        {
          onTypes: r.on_types,
          owner: { urn: r.owner_urn, tokenId: r.owner_token_id, suspended: r.suspended },
          actions: actionsFromJson(r.actions),
        },
      ]),
    );
  if (stored.size === 0) return 0;

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
  const lacking = await ownersLacking(plans, stored, ownerPrivileges);

  const needed = plans.flatMap(({ item, runs }) =>
    runs.flatMap((run) => run.actions.map((a) => ({ urn: item.evaluation.urn, aspectName: aspectOfAction(a.type) }))),
  );
  // Locked before they are read, in the aspect store's one order: a concurrent ingestion of the same aspect waits.
  await aspects.lock(client, needed);
  const current = await aspects.latestOfPairs(client, needed);
  const time = Date.now();
  const writes: VersionedAspectWrite[] = [];
  const audit: AuditEventInput[] = [];
  const refusals = new Map<string, Refusal>();
  for (const { item, runs: all } of plans) {
    const urn = item.evaluation.urn;
    const refusing = all.some((run) => lacking.has(run.test));
    const runs = refusing ? withoutRefused(all, (test) => lacking.get(test)) : all;
    if (refusing) noteRefused(refusals, planActions(current.get(urn) ?? {}, all, time), lacking, item);
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
          ...(unsaved && { unsaved: true }),
        },
      });
    }
  }
  const refused: AuditEventInput[] = [];
  for (const [test, refusal] of refusals) {
    refused.push({
      actorUrn: refusal.actorUrn,
      action: TEST_ACTIONS_REFUSED_AUDIT,
      targetUrn: test,
      details: {
        owner: stored.get(test)!.owner.urn,
        missingPrivileges: [...refusal.missing].sort(),
        actions: [...refusal.types].sort(),
        entities: refusal.entities.size,
        via: "test-action",
      },
    });
  }
  // Refusals change nothing, and anyone who may push can cause them at will: each actor's are budgeted, the rest
  // counted into one audit.suppressed row (docs/audit.md).
  audit.push(...REFUSAL_AUDIT_BUDGET.admit(refused));
  // Marked, so that evaluation on change does not evaluate again on what the tests' own actions wrote: two tests (or
  // one) whose actions undo each other would otherwise rewrite an entity at every pass, forever.
  await aspects.upsert(client, writes, "system", null, TEST_ACTIONS_APP_SOURCE);
  await insertAuditEvents(client, audit);
  return writes.length;
}

/** A test's actions as a push applies them: the types it selects, for whom they act, and what they are. */
export interface UnsavedTestActions {
  onTypes: string[];
  owner: WorkOwner;
  actions: TestActions;
}

/** What one test's owner could not do in a push: for its one audit row. */
interface Refusal {
  /** who asked for the push (the first item it was refused in) */
  actorUrn: string;
  missing: Set<Privilege>;
  types: Set<string>;
  /** the entities a refused action would have changed */
  entities: Set<string>;
}

/**
 * Notes, per test, the refused actions that would have changed the entity (`full`: the plan with every action, as if
 * the owners held everything): a refused action that would change nothing withholds nothing, and is not audited, as
 * re-running an allowed one is not.
 */
function noteRefused(
  refusals: Map<string, Refusal>,
  full: ReturnType<typeof planActions>,
  lacking: ReadonlyMap<string, ReadonlySet<Privilege>>,
  item: PushItem,
): void {
  for (const action of full.actions) {
    const privilege = privilegeOfAction(action.type);
    if (!action.wouldChange || !lacking.get(action.test)?.has(privilege)) continue;
    const refusal = refusals.get(action.test) ?? {
      actorUrn: item.actorUrn,
      missing: new Set<Privilege>(),
      types: new Set<string>(),
      entities: new Set<string>(),
    };
    refusal.missing.add(privilege);
    refusal.types.add(action.type);
    refusal.entities.add(item.evaluation.urn);
    refusals.set(action.test, refusal);
  }
}

/**
 * Of the privileges each test's actions need, those its owner lacks now, by test (tests whose owner lacks none are
 * absent): what the owner may use through the token it set the test with, nothing while the test is suspended
 * (ownerPrivilegesReader). Read once per owner and token, and only for tests that have runs in this push.
 */
async function ownersLacking(
  plans: ReadonlyArray<{ runs: readonly ActionRun[] }>,
  stored: ReadonlyMap<string, { owner: WorkOwner; actions: TestActions }>,
  ownerPrivileges: OwnerPrivileges,
): Promise<Map<string, ReadonlySet<Privilege>>> {
  const running = new Set(plans.flatMap(({ runs }) => runs.map((r) => r.test)));
  const grants = new Map<string, Promise<ReadonlySet<Privilege>>>();
  const lacking = new Map<string, ReadonlySet<Privilege>>();
  for (const test of running) {
    const { owner, actions } = stored.get(test)!;
    const key = ownerKey(owner);
    if (!grants.has(key)) grants.set(key, ownerPrivileges(owner));
    const missing = privilegesLacking(actions, await grants.get(key)!);
    if (missing.length > 0) lacking.set(test, new Set(missing));
  }
  return lacking;
}
