import { parseUrn, UrnParseError } from "@mdp/core";
import type { Privilege } from "@mdp/core";
import type { TestAction, TestActions } from "./definition.types";
import type { EntityEvaluation, ResultAction } from "./entity-evaluation";
import type { EntitySnapshot } from "./entity.types";
import { DEFINITION_LIMITS } from "./definition-limits";
import { describeValue, isRecord, ProblemList } from "./problem-list";
import { TestDefinitionError } from "./test-definition.error";

/**
 * Test actions: what a test does to an entity when its result is pushed (`actions: {passing, failing}`), in DataHub's
 * terms (metadata-io's ActionType and its appliers): each action is `{type, params}`, params a map of string lists,
 * and writes one of DataHub's aspects. Parsing and planning are pure; the evaluation worker writes what a plan says.
 */

/** What one parameter of an action takes. */
interface ParamSpec {
  required: boolean;
  /** the urn entity types its values must have; unset: free text */
  urnTypes?: readonly string[];
  /** at most this many values (unset: DEFINITION_LIMITS.valuesPerAction) */
  max?: number;
  /** the values it may take (unset: any) */
  oneOf?: readonly string[];
}

/** DataHub's OwnershipType values an owner may be added with (CUSTOM needs a type urn, which actions cannot give). */
export const OWNERSHIP_TYPES = [
  "TECHNICAL_OWNER",
  "BUSINESS_OWNER",
  "DATA_STEWARD",
  "NONE",
  "DEVELOPER",
  "DATAOWNER",
  "DELEGATE",
  "PRODUCER",
  "CONSUMER",
  "STAKEHOLDER",
] as const;

/** The ownership type ADD_OWNERS gives when its params name none. */
export const DEFAULT_OWNERSHIP_TYPE = "TECHNICAL_OWNER";

/** The note DEPRECATE writes when its params give none (DataHub's DeprecateAbstractAction writes this one). */
export const DEFAULT_DEPRECATION_NOTE = "Deprecated via metadata tests";

/** The aspects actions write, each DataHub's. */
export type ActionAspect = "globalTags" | "glossaryTerms" | "ownership" | "domains" | "deprecation";

interface ActionSpec {
  aspect: ActionAspect;
  params: Readonly<Record<string, ParamSpec>>;
}

const urns = (...types: string[]): ParamSpec => ({ required: true, urnTypes: types });

/** Every action type this service runs, with the aspect it writes and its params. Names as DataHub's ActionType. */
export const ACTION_TYPES: Readonly<Record<string, ActionSpec>> = {
  ADD_TAGS: { aspect: "globalTags", params: { values: urns("tag") } },
  REMOVE_TAGS: { aspect: "globalTags", params: { values: urns("tag") } },
  ADD_GLOSSARY_TERMS: { aspect: "glossaryTerms", params: { values: urns("glossaryTerm") } },
  REMOVE_GLOSSARY_TERMS: { aspect: "glossaryTerms", params: { values: urns("glossaryTerm") } },
  ADD_OWNERS: {
    aspect: "ownership",
    params: {
      values: urns("corpuser", "corpGroup"),
      ownerType: { required: false, max: 1, oneOf: OWNERSHIP_TYPES },
    },
  },
  REMOVE_OWNERS: { aspect: "ownership", params: { values: urns("corpuser", "corpGroup") } },
  SET_DOMAIN: { aspect: "domains", params: { values: { ...urns("domain"), max: 1 } } },
  UNSET_DOMAIN: { aspect: "domains", params: {} },
  DEPRECATE: { aspect: "deprecation", params: { note: { required: false, max: 1 } } },
  UN_DEPRECATE: { aspect: "deprecation", params: {} },
};

/**
 * The privilege writing each aspect takes: DataHub's resource privileges for editing it. A test's actions run for its
 * owner (docs/authorization.md), so the owner must hold the privilege of every aspect they write, when the test is
 * saved and again at each push (INGEST_METADATA implies them all).
 */
export const ACTION_ASPECT_PRIVILEGES: Readonly<Record<ActionAspect, Privilege>> = {
  globalTags: "EDIT_ENTITY_TAGS",
  glossaryTerms: "EDIT_ENTITY_GLOSSARY_TERMS",
  ownership: "EDIT_ENTITY_OWNERS",
  domains: "EDIT_ENTITY_DOMAINS",
  deprecation: "EDIT_ENTITY_DEPRECATION",
};

/** The privileges a test's actions need, each once. */
export function privilegesOfActions(actions: TestActions | undefined): Privilege[] {
  if (!actions) return [];
  const needed = new Set<Privilege>();
  for (const action of [...actions.passing, ...actions.failing]) {
    needed.add(privilegeOfAction(action.type));
  }
  return [...needed].sort();
}

/**
 * Of the privileges `actions` need, those `held` lacks: the actions' owner may not write what these guard (a test is
 * saved only by one who holds them all; a push re-checks its owner's current grants).
 */
export function privilegesLacking(actions: TestActions | undefined, held: ReadonlySet<Privilege>): Privilege[] {
  return privilegesOfActions(actions).filter((p) => !held.has(p));
}

/** The privilege an action needs: its aspect's. */
export function privilegeOfAction(type: string): Privilege {
  return ACTION_ASPECT_PRIVILEGES[aspectOfAction(type)];
}

/** The aspect an action type writes. */
export function aspectOfAction(type: string): ActionAspect {
  return ACTION_TYPES[type]!.aspect;
}

const ACTION_KEYS = ["type", "params"];
/** Names compared without case, underscores or hyphens: `un_deprecate`, `UnDeprecate` and `UN-DEPRECATE` all match. */
const comparable = (name: string) => name.replace(/[_-]/g, "").toLowerCase();
const TYPE_BY_NAME = new Map(Object.keys(ACTION_TYPES).map((type) => [comparable(type), type]));

/**
 * A stored definition's `actions` re-validated (the evaluation worker reads them alone when it pushes); throws a
 * TestDefinitionError as definitionFromJson does.
 */
export function actionsFromJson(json: unknown): TestActions {
  const problems = new ProblemList();
  const actions = parseActions(json, problems);
  if (!actions || !problems.isEmpty) throw new TestDefinitionError(problems.problems);
  return actions;
}

/** Parses `actions: {passing: [...], failing: [...]}`; problems are added, naming each path. */
export function parseActions(raw: unknown, problems: ProblemList): TestActions | undefined {
  if (!isRecord(raw)) {
    problems.add("actions", `must be an object with 'passing' and/or 'failing' lists, got ${describeValue(raw)}`);
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (key !== "passing" && key !== "failing") {
      problems.add(`actions.${key}`, "unknown key (expected passing, failing)");
    }
  }
  const actions = {
    passing: parseActionList(raw.passing, "actions.passing", problems),
    failing: parseActionList(raw.failing, "actions.failing", problems),
  };
  const count = actions.passing.length + actions.failing.length;
  if (count > DEFINITION_LIMITS.actions) {
    problems.add("actions", `${count} actions, more than the limit of ${DEFINITION_LIMITS.actions}`);
  }
  return actions;
}

function parseActionList(raw: unknown, path: string, problems: ProblemList): TestAction[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) {
    problems.add(path, `must be a list of actions, got ${describeValue(raw)}`);
    return [];
  }
  // Refused before walking them: each is parsed and each urn checked.
  if (raw.length > DEFINITION_LIMITS.actions) {
    problems.add(path, `${raw.length} actions, more than the limit of ${DEFINITION_LIMITS.actions}`);
    return [];
  }
  return raw.flatMap((action, index) => {
    const parsed = parseAction(action, `${path}[${index}]`, problems);
    return parsed ? [parsed] : [];
  });
}

/**
 * One action: `{type, params: {name: value | [values]}}`, or DataHub's shorthand with the params beside the type
 * (`{type: ADD_TAGS, values: [...]}`). Normalized to `{type: <canonical name>, params}` with every param a list.
 */
function parseAction(raw: unknown, path: string, problems: ProblemList): TestAction | undefined {
  if (!isRecord(raw)) {
    problems.add(
      path,
      `must be an action such as {type: ADD_TAGS, params: {values: [urn:li:tag:pii]}}, got ${describeValue(raw)}`,
    );
    return undefined;
  }
  const { type: rawType } = raw;
  if (typeof rawType !== "string" || rawType.trim() === "") {
    problems.add(`${path}.type`, `must be a non-empty string such as 'ADD_TAGS', got ${describeValue(rawType)}`);
    return undefined;
  }
  const type = TYPE_BY_NAME.get(comparable(rawType.trim()));
  if (!type) {
    problems.add(
      `${path}.type`,
      `unknown action type '${rawType.slice(0, 100)}' (valid: ${Object.keys(ACTION_TYPES).join(", ")})`,
    );
    return undefined;
  }
  const beside = Object.keys(raw).filter((key) => !ACTION_KEYS.includes(key));
  let rawParams: Record<string, unknown>;
  let paramsPath: string;
  if ("params" in raw) {
    for (const key of beside) problems.add(`${path}.${key}`, "unknown key (expected type, params)");
    if (!isRecord(raw.params)) {
      problems.add(`${path}.params`, `must be an object of parameters, got ${describeValue(raw.params)}`);
      return undefined;
    }
    rawParams = raw.params;
    paramsPath = `${path}.params`;
  } else {
    rawParams = Object.fromEntries(beside.map((key) => [key, raw[key]]));
    paramsPath = path;
  }
  const spec = ACTION_TYPES[type]!;
  const params: Record<string, string[]> = {};
  let valid = true;
  for (const [name, value] of Object.entries(rawParams)) {
    const paramSpec = spec.params[name];
    if (!paramSpec) {
      const expected = Object.keys(spec.params);
      problems.add(
        `${paramsPath}.${name}`,
        `unknown parameter of ${type} (${expected.length > 0 ? `expected ${expected.join(", ")}` : "it takes none"})`,
      );
      valid = false;
      continue;
    }
    const values = parseParam(value, `${paramsPath}.${name}`, type, paramSpec, problems);
    if (values) params[name] = values;
    else valid = false;
  }
  for (const [name, paramSpec] of Object.entries(spec.params)) {
    if (paramSpec.required && !(name in rawParams)) {
      problems.add(`${paramsPath}.${name}`, `missing: ${type} needs '${name}'${describeParam(paramSpec)}`);
      valid = false;
    }
  }
  if (!valid) return undefined;
  // In the spec's order, so that the normalized form reads back the same from jsonb (see normalized-text.ts).
  return { type, params: orderedParams(type, params) };
}

/** An action's params in its type's declared order. */
export function orderedParams(type: string, params: Readonly<Record<string, string[]>>): Record<string, string[]> {
  const names = Object.keys(ACTION_TYPES[type]?.params ?? {});
  return Object.fromEntries(names.filter((name) => params[name] !== undefined).map((name) => [name, params[name]!]));
}

function describeParam(spec: ParamSpec): string {
  if (spec.urnTypes) return ` (${spec.max === 1 ? "one" : "a list of"} ${spec.urnTypes.join(" or ")} urns)`;
  return "";
}

/** A param's values: a string or a list of strings, bounded, each checked; duplicates dropped. */
function parseParam(
  raw: unknown,
  path: string,
  type: string,
  spec: ParamSpec,
  problems: ProblemList,
): string[] | undefined {
  const list = typeof raw === "string" ? [raw] : raw;
  if (!Array.isArray(list)) {
    problems.add(path, `must be a string or a list of strings, got ${describeValue(raw)}`);
    return undefined;
  }
  const max = spec.max ?? DEFINITION_LIMITS.valuesPerAction;
  if (list.length > max) {
    problems.add(path, `${list.length} values, more than the limit of ${max} for this parameter of ${type}`);
    return undefined;
  }
  if (spec.required && list.length === 0) {
    problems.add(path, `must not be empty: ${type} needs at least one value`);
    return undefined;
  }
  let valid = true;
  list.forEach((value: unknown, index) => {
    const at = typeof raw === "string" ? path : `${path}[${index}]`;
    if (typeof value !== "string") {
      problems.add(at, `must be a string, got ${describeValue(value)}`);
      valid = false;
    } else if (value.length > DEFINITION_LIMITS.actionValueLength) {
      problems.add(
        at,
        `${value.length} characters, more than the limit of ${DEFINITION_LIMITS.actionValueLength} for an action's value`,
      );
      valid = false;
    } else if (spec.oneOf && !spec.oneOf.includes(value)) {
      problems.add(at, `'${value.slice(0, 100)}' is not one of ${spec.oneOf.join(", ")}`);
      valid = false;
    } else if (spec.urnTypes) {
      const reason = urnProblem(value, spec.urnTypes);
      if (reason) {
        problems.add(at, reason);
        valid = false;
      }
    }
  });
  return valid ? [...new Set(list as string[])] : undefined;
}

function urnProblem(value: string, types: readonly string[]): string | undefined {
  try {
    const urn = parseUrn(value);
    if (!types.includes(urn.entityType)) {
      return `'${value.slice(0, 100)}' is not a ${types.join(" or ")} urn`;
    }
    return undefined;
  } catch (error) {
    const reason = error instanceof UrnParseError ? error.message : "malformed";
    return `invalid urn '${value.slice(0, 100)}' (${reason})`;
  }
}

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

/** What a test's owner lacks of its actions' privileges (unset or empty: nothing; every action runs). */
export type LackingOf = (test: string) => ReadonlySet<Privilege> | undefined;

/**
 * The runs as their tests' owners may have them: each keeps, in order, only the actions whose privilege its owner
 * holds; runs left with none are dropped.
 */
export function withoutRefused(runs: readonly ActionRun[], lacking: LackingOf): ActionRun[] {
  return runs.flatMap((run) => {
    const lacks = lacking(run.test);
    if (!lacks || lacks.size === 0) return [run];
    const kept = run.actions.filter((action) => !lacks.has(privilegeOfAction(action.type)));
    return kept.length > 0 ? [{ ...run, actions: kept }] : [];
  });
}

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

/**
 * Lists on each result of `evaluation` the actions its test would take if the result were pushed, planned against the
 * aspects the evaluation read (`entity`): `{type, params, wouldChange}` in its definition's order. An action whose
 * privilege the test's owner lacks (`lacking`) is listed with `missingPrivilege` and `wouldChange: false`, and left
 * out of the plan, as a push leaves it out. Results of tests without actions for their outcome get no `actions`
 * field. A push plans again, under its locks, against the aspects and the owners' grants as they are then.
 */
export function annotateActions(
  evaluation: EntityEvaluation,
  entity: EntitySnapshot,
  actionsOf: (test: string) => TestActions | undefined,
  lacking: LackingOf = () => undefined,
): EntityEvaluation {
  const runs = actionRunsOf(evaluation, actionsOf);
  if (runs.length === 0) return evaluation;
  const { actions } = planActions(entity.aspects, withoutRefused(runs, lacking), evaluation.evaluatedAt);
  const listed = (test: string, outcome: ActionRun["outcome"]): ResultAction[] => {
    const planned = actions.filter((a) => a.test === test && a.outcome === outcome);
    const lacks = lacking(test);
    let next = 0;
    return (runs.find((r) => r.test === test && r.outcome === outcome)?.actions ?? []).map(({ type, params }) => {
      const privilege = privilegeOfAction(type);
      if (lacks?.has(privilege)) return { type, params, wouldChange: false, missingPrivilege: privilege };
      return { type, params, wouldChange: planned[next++]!.wouldChange };
    });
  };
  const withActions = <R extends { test: string }>(result: R, outcome: ActionRun["outcome"]): R => {
    const list = listed(result.test, outcome);
    return list.length > 0 ? { ...result, actions: list } : result;
  };
  return {
    ...evaluation,
    passing: evaluation.passing.map((r) => withActions(r, "passing")),
    failing: evaluation.failing.map((r) => withActions(r, "failing")),
  };
}
