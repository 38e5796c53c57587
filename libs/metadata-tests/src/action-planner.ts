import type { TestAction, TestActions } from "./definition.types";
import { isRecord } from "./problem-list";
import {
  DEFAULT_DEPRECATION_NOTE,
  DEFAULT_OWNERSHIP_TYPE,
  aspectOfAction,
  type ActionAspect,
} from "./action-catalogue";

// --- Planning: what a push does to one entity's aspects. ---

/** A test whose result is pushed, with the actions of its outcome. */
export interface ActionRun {
  test: string;
  outcome: "passing" | "failing";
  actions: readonly TestAction[];
}

/** One action as planned: `wouldChange` says whether the entity ends up different because of it. */
export interface PlannedAction {
  test: string;
  outcome: "passing" | "failing";
  type: string;
  params: Record<string, string[]>;
  aspect: ActionAspect;
  wouldChange: boolean;
}

/** A new value of one aspect, and the tests whose actions changed it. */
export interface AspectWrite {
  aspect: ActionAspect;
  value: Record<string, unknown>;
  tests: string[];
}

export interface ActionPlan {
  actions: PlannedAction[];
  /** only the aspects whose content changes; empty when re-running changes nothing */
  writes: AspectWrite[];
}

/**
 * Applies the actions of the tests pushed for one entity to its current aspects (`current`: their latest values; an
 * aspect never written is absent). The order is fixed, so a conflict has one answer whatever order tests ran in:
 * every passing test's actions first, then every failing test's, tests in urn order within each, each test's actions
 * in its definition's order; a later action wins where two disagree (a failing test's REMOVE_TAGS beats a passing
 * test's ADD_TAGS of the same tag). Content is compared, not stamps: an aspect is written only when its tags, terms,
 * owners, domain or deprecated flag end up different from what is stored, so re-running writes nothing. `time`
 * stamps what is written (glossaryTerms.auditStamp, ownership.lastModified); the actor of a stamp is the test.
 */
export function planActions(current: Readonly<Record<string, unknown>>, runs: readonly ActionRun[], time: number) {
  const ordered = [...runs].sort(
    (a, b) =>
      (a.outcome === b.outcome ? 0 : a.outcome === "passing" ? -1 : 1) ||
      (a.test < b.test ? -1 : a.test > b.test ? 1 : 0),
  );
  const working = new Map<ActionAspect, Working>();
  /** each changed key's value before any action changed it (the stored value) */
  const before = new Map<string, string>();
  /** the index (in `planned`) of the last action that changed each key */
  const lastChange = new Map<string, number>();
  const planned: PlannedAction[] = [];
  for (const run of ordered) {
    for (const action of run.actions) {
      const aspect = aspectOfAction(action.type);
      let state = working.get(aspect);
      if (!state) {
        state = HANDLERS[aspect].read(current[aspect]);
        working.set(aspect, state);
      }
      const index = planned.length;
      planned.push({ test: run.test, outcome: run.outcome, ...action, aspect, wouldChange: false });
      for (const change of HANDLERS[aspect].apply(state, action, run.test)) {
        const key = `${aspect}\u0000${change.key}`;
        if (!before.has(key)) before.set(key, change.was);
        lastChange.set(key, index);
      }
    }
  }
  const changedAspects = new Map<ActionAspect, Set<string>>();
  for (const [key, index] of lastChange) {
    const aspect = key.slice(0, key.indexOf("\u0000")) as ActionAspect;
    const state = working.get(aspect)!;
    if (HANDLERS[aspect].valueOf(state, key.slice(aspect.length + 1)) === before.get(key)) continue;
    planned[index]!.wouldChange = true;
    const tests = changedAspects.get(aspect) ?? new Set<string>();
    tests.add(planned[index]!.test);
    changedAspects.set(aspect, tests);
  }
  const writes: AspectWrite[] = [...changedAspects].map(([aspect, tests]) => {
    const state = working.get(aspect)!;
    // The stamp's actor: the test whose change comes last in the order above.
    const actor = [...planned].reverse().find((p) => p.aspect === aspect && p.wouldChange)!.test;
    return { aspect, value: HANDLERS[aspect].write(state, current[aspect], actor, time), tests: [...tests].sort() };
  });
  return { actions: planned, writes } satisfies ActionPlan;
}

/** An aspect being changed: its entries (kept as stored, unknown fields included) or fields. */
interface Working {
  entries: Array<Record<string, unknown>>;
  fields: Record<string, unknown>;
}

interface Change {
  key: string;
  /** the key's value just before this action */
  was: string;
}

interface AspectHandler {
  read(value: unknown): Working;
  /** applies the action to `state`, answering the keys whose value it changed */
  apply(state: Working, action: TestAction, test: string): Change[];
  /** a key's current value, as compared with its stored value */
  valueOf(state: Working, key: string): string;
  write(state: Working, stored: unknown, actor: string, time: number): Record<string, unknown>;
}

const listOf = (value: unknown, field: string): Array<Record<string, unknown>> => {
  const list = isRecord(value) ? value[field] : undefined;
  return Array.isArray(list) ? list.filter(isRecord) : [];
};
const storedFields = (value: unknown): Record<string, unknown> => (isRecord(value) ? { ...value } : {});
const PRESENT = "present";
const ABSENT = "absent";

/** globalTags {tags: [{tag}]} and glossaryTerms {terms: [{urn}]}: a set of urns, one key per urn. */
function urnSet(listField: string, urnField: string, stamp?: string): AspectHandler {
  const has = (state: Working, urn: string) => state.entries.some((e) => e[urnField] === urn);
  return {
    read: (value) => ({ entries: listOf(value, listField), fields: {} }),
    apply(state, action) {
      const adding = action.type.startsWith("ADD_");
      const changes: Change[] = [];
      for (const urn of action.params.values ?? []) {
        if (has(state, urn) === adding) continue;
        changes.push({ key: urn, was: adding ? ABSENT : PRESENT });
        if (adding) state.entries.push({ [urnField]: urn });
        else state.entries = state.entries.filter((e) => e[urnField] !== urn);
      }
      return changes;
    },
    valueOf: (state, urn) => (has(state, urn) ? PRESENT : ABSENT),
    write: (state, stored, actor, time) => ({
      ...storedFields(stored),
      [listField]: state.entries,
      ...(stamp ? { [stamp]: { time, actor } } : {}),
    }),
  };
}

/** ownership {owners: [{owner, type}]}: one key per (owner, type); REMOVE_OWNERS removes every type of an owner. */
const ownership: AspectHandler = {
  read: (value) => ({ entries: listOf(value, "owners"), fields: {} }),
  apply(state, action) {
    const changes: Change[] = [];
    if (action.type === "ADD_OWNERS") {
      const type = action.params.ownerType?.[0] ?? DEFAULT_OWNERSHIP_TYPE;
      for (const owner of action.params.values ?? []) {
        if (state.entries.some((e) => e.owner === owner && e.type === type)) continue;
        changes.push({ key: JSON.stringify([owner, type]), was: ABSENT });
        state.entries.push({ owner, type });
      }
      return changes;
    }
    const removed = new Set(action.params.values ?? []);
    for (const entry of state.entries) {
      if (removed.has(entry.owner as string)) {
        changes.push({ key: JSON.stringify([entry.owner, entry.type]), was: PRESENT });
      }
    }
    state.entries = state.entries.filter((e) => !removed.has(e.owner as string));
    return changes;
  },
  valueOf(state, key) {
    const [owner, type] = JSON.parse(key) as [string, unknown];
    return state.entries.some((e) => e.owner === owner && e.type === type) ? PRESENT : ABSENT;
  },
  write: (state, stored, actor, time) => ({
    ...storedFields(stored),
    owners: state.entries,
    lastModified: { time, actor },
  }),
};

const domainsOf = (state: Working) =>
  Array.isArray(state.fields.domains) ? (state.fields.domains as unknown[]).filter((d) => typeof d === "string") : [];

/** domains {domains: [urn]}: one key, the list. */
const domains: AspectHandler = {
  read: (value) => ({ entries: [], fields: storedFields(value) }),
  apply(state, action) {
    const was = JSON.stringify(domainsOf(state));
    const next = action.type === "SET_DOMAIN" ? [action.params.values![0]!] : [];
    if (JSON.stringify(next) === was) return [];
    state.fields.domains = next;
    return [{ key: "domains", was }];
  },
  valueOf: (state) => JSON.stringify(domainsOf(state)),
  write: (state) => ({ ...state.fields, domains: domainsOf(state) }),
};

/**
 * deprecation {deprecated, note, actor, decommissionTime?}: one key, the flag. DEPRECATE leaves an entity already
 * deprecated as it is (its note and actor, perhaps a person's), UN_DEPRECATE one that is not deprecated.
 */
const deprecation: AspectHandler = {
  read: (value) => ({ entries: [], fields: storedFields(value) }),
  apply(state, action, test) {
    const deprecated = state.fields.deprecated === true;
    const deprecate = action.type === "DEPRECATE";
    if (deprecated === deprecate) return [];
    state.fields = deprecate
      ? { deprecated: true, note: action.params.note?.[0] ?? DEFAULT_DEPRECATION_NOTE, actor: test }
      : { deprecated: false, note: "", actor: test };
    return [{ key: "deprecated", was: String(deprecated) }];
  },
  valueOf: (state) => String(state.fields.deprecated === true),
  write: (state) => ({ ...state.fields }),
};

const HANDLERS: Record<ActionAspect, AspectHandler> = {
  globalTags: urnSet("tags", "tag"),
  glossaryTerms: urnSet("terms", "urn", "auditStamp"),
  ownership,
  domains,
  deprecation,
};

/** The actions of each test's outcome in a definition, for planning. */
export function actionRunsOf(
  results: { passing: ReadonlyArray<{ test: string }>; failing: ReadonlyArray<{ test: string }> },
  actionsOf: (test: string) => TestActions | undefined,
): ActionRun[] {
  const runs: ActionRun[] = [];
  for (const outcome of ["passing", "failing"] as const) {
    for (const { test } of results[outcome]) {
      const actions = actionsOf(test)?.[outcome] ?? [];
      if (actions.length > 0) runs.push({ test, outcome, actions });
    }
  }
  return runs;
}
