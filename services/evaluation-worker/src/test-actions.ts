import type { Privilege } from "@mdp/core";
import {
  AuditBudget,
  insertAuditEvents,
  testActionsOf,
  TEST_ACTIONS_APP_SOURCE,
  type AspectRepository,
  type AuditEventInput,
  type OwnerPrivileges,
  type VersionedAspectWrite,
} from "@mdp/db";
import {
  actionRunsOf,
  actionsFromJson,
  aspectOfAction,
  planActions,
  privilegeOfAction,
  withoutRefused,
  type ActionRun,
  type TestActions,
} from "@mdp/metadata-tests";
import type pg from "pg";
import { ActionAuthority, callerKey, callerOf, type ActionsToWeigh, type Withheld } from "./action-authority";
import type { PushItem } from "./results.pusher";

/** The audit action of a test's actions that changed an entity (docs/audit.md). */
export const TEST_ACTIONS_AUDIT = "test.actions";
/** Per process, as the budget of the queue dashboard's rows: bounds the refusal rows one actor's pushes leave. */
const REFUSAL_AUDIT_BUDGET = new AuditBudget();

/**
 * The audit action of a test's actions left out of a push because its owner, or the caller pushing another's test,
 * lacks their privileges (docs/audit.md).
 */
export const TEST_ACTIONS_REFUSED_AUDIT = "test.actions.refused";

/**
 * Runs the actions of pushed results (libs/metadata-tests test-actions.ts plans them) inside the push's transaction:
 * the aspects they write (globalTags, glossaryTerms, ownership, domains, deprecation) are locked, read, changed and
 * written as new versions through the aspect store ingestion uses, and each test that changed an entity leaves an
 * audit row, all committing or rolling back with the results. The tests' actions are read in the same transaction, so
 * a test deleted, or edited away from the entity's type, while the evaluation ran takes no action. Aspects whose
 * content would not change get no version (re-running writes nothing). Answers how many aspect versions it wrote.
 *
 * Actions write only what both their test's owner and the push's caller (the item's actor, through its token) may
 * write now (ActionAuthority: grants read afresh, once per principal per push, and only when a pushed result has
 * actions); an action either lacks is left out, and an INACTIVE test's actions run only when its owner pushes; the
 * results are pushed all the same. A test whose left-out actions would have changed an entity leaves one
 * `test.actions.refused` row per push and caller, naming its owner, the missing privileges and how many entities.
 */
export async function applyTestActions(
  client: pg.ClientBase,
  aspects: AspectRepository,
  items: readonly PushItem[],
  ownerPrivileges: OwnerPrivileges,
  /** runTestDefinition's DEFAULT mode: the unsaved test's actions, instead of reading stored tests' */
  unsaved?: ReadonlyMap<string, UnsavedTestActions>,
): Promise<number> {
  // A loop, not a flatMap of spread arrays: a run's batch is a thousand items of the same test.
  const tests = new Set<string>();
  for (const item of items) {
    for (const result of item.evaluation.passing) tests.add(result.test);
    for (const result of item.evaluation.failing) tests.add(result.test);
  }
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
          active: r.active,
          actions: actionsFromJson(r.actions),
        },
      ]),
    );
  if (stored.size === 0) return 0;

  // One entry per entity: items for the same entity (two requests in one job, or one per owner in evaluation on
  // change) apply in order, a later outcome of a test replacing an earlier one; each outcome keeps the item it came
  // from, whose caller its actions act for.
  const entities = new Map<string, { item: PushItem; outcomes: Map<string, Outcome> }>();
  for (const item of items) {
    const entry = entities.get(item.evaluation.urn) ?? { item, outcomes: new Map<string, Outcome>() };
    entry.item = item;
    for (const r of item.evaluation.passing) entry.outcomes.set(r.test, { outcome: "passing", item });
    for (const r of item.evaluation.failing) entry.outcomes.set(r.test, { outcome: "failing", item });
    entities.set(item.evaluation.urn, entry);
  }
  const plans = [...entities.values()].flatMap(({ item, outcomes }) => {
    const actionsOf = (test: string): TestActions | undefined => {
      const found = stored.get(test);
      return found?.onTypes.includes(item.entityType) ? found.actions : undefined;
    };
    const results = { passing: [] as Array<{ test: string }>, failing: [] as Array<{ test: string }> };
    for (const [test, { outcome }] of outcomes) results[outcome].push({ test });
    const runs = actionRunsOf(results, actionsOf);
    const callers = new Map([...outcomes].map(([test, o]) => [test, o.item]));
    return runs.length > 0 ? [{ item, runs, callers }] : [];
  });
  if (plans.length === 0) return 0;
  const withheld = await withheldOf(plans, stored, new ActionAuthority(ownerPrivileges));

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
  for (const { item, runs: all, callers } of plans) {
    const urn = item.evaluation.urn;
    const decided = (test: string) => withheld.get(withheldKey(test, callers.get(test)!));
    const lacking = (test: string) => decided(test)?.missing;
    // An INACTIVE test pushed by another than its owner: none of its actions run, and nothing is refused (no
    // privilege would have let them run).
    const eligible = all.filter((run) => decided(run.test)?.notApplied === undefined);
    const refusing = eligible.some((run) => lacking(run.test) !== undefined);
    const runs = refusing ? withoutRefused(eligible, lacking) : eligible;
    if (refusing) noteRefused(refusals, planActions(current.get(urn) ?? {}, eligible, time), lacking, callers);
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
        actorUrn: callers.get(run.test)!.actorUrn,
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
  for (const refusal of refusals.values()) {
    refused.push({
      actorUrn: refusal.actorUrn,
      action: TEST_ACTIONS_REFUSED_AUDIT,
      targetUrn: refusal.test,
      details: {
        owner: stored.get(refusal.test)!.owner.urn,
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

/** A test's outcome for an entity in a push, and the item (the caller) it came with. */
interface Outcome {
  outcome: "passing" | "failing";
  item: PushItem;
}

/**
 * A test's actions as a push applies them: the types it selects, for whom they act, whether the test is ACTIVE, and
 * what they are.
 */
export interface UnsavedTestActions extends ActionsToWeigh {
  onTypes: string[];
}

/** What one test's actions could not do in a push by one caller: for its one audit row. */
interface Refusal {
  test: string;
  /** who asked for the push */
  actorUrn: string;
  missing: Set<Privilege>;
  types: Set<string>;
  /** the entities a refused action would have changed */
  entities: Set<string>;
}

/**
 * Notes, per test and caller, the refused actions that would have changed the entity (`full`: the plan with every
 * action, as if everything were held): a refused action that would change nothing withholds nothing, and is not
 * audited, as re-running an allowed one is not.
 */
function noteRefused(
  refusals: Map<string, Refusal>,
  full: ReturnType<typeof planActions>,
  lacking: (test: string) => ReadonlySet<Privilege> | undefined,
  callers: ReadonlyMap<string, PushItem>,
): void {
  for (const action of full.actions) {
    const privilege = privilegeOfAction(action.type);
    if (!action.wouldChange || !lacking(action.test)?.has(privilege)) continue;
    const item = callers.get(action.test)!;
    const key = withheldKey(action.test, item);
    const refusal = refusals.get(key) ?? {
      test: action.test,
      actorUrn: item.actorUrn,
      missing: new Set<Privilege>(),
      types: new Set<string>(),
      entities: new Set<string>(),
    };
    refusal.missing.add(privilege);
    refusal.types.add(action.type);
    refusal.entities.add(item.evaluation.urn);
    refusals.set(key, refusal);
  }
}

function withheldKey(test: string, item: PushItem): string {
  return `${test}\n${callerKey(callerOf(item))}`;
}

/**
 * What each (test, caller) pair that has runs in this push may not do (ActionAuthority), by withheldKey; pairs that
 * may do everything are absent.
 */
async function withheldOf(
  plans: ReadonlyArray<{ runs: readonly ActionRun[]; callers: ReadonlyMap<string, PushItem> }>,
  stored: ReadonlyMap<string, ActionsToWeigh>,
  authority: ActionAuthority,
): Promise<Map<string, Withheld>> {
  const withheld = new Map<string, Withheld>();
  const weighed = new Set<string>();
  for (const { runs, callers } of plans) {
    for (const { test } of runs) {
      const item = callers.get(test)!;
      const key = withheldKey(test, item);
      if (weighed.has(key)) continue;
      weighed.add(key);
      const decided = await authority.withheld(stored.get(test)!, callerOf(item));
      if (decided) withheld.set(key, decided);
    }
  }
  return withheld;
}
