import { parseUrn, UrnParseError } from "@mdp/core";
import type { TestAction, TestActions } from "./definition.types";
import { DEFINITION_LIMITS } from "./definition-limits";
import { describeValue, isRecord, ProblemList } from "./problem-list";
import { TestDefinitionError } from "./test-definition.error";
import { ACTION_TYPES, orderedParams, type ParamSpec } from "./action-catalogue";

/** Parsing a test's actions against the catalogue (action-catalogue.ts): pure, problems named by path. */

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
