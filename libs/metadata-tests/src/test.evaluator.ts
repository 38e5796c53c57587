import type { ParsedDefinition } from "./definition.types";
import type { EntitySnapshot } from "./entity.types";
import type { FailedRule } from "./failed-rule";
import { checkPredicate } from "./predicate.evaluator";

/** A test that does not apply to the entity says nothing about it: it neither passes nor fails. */
export type TestOutcome = { applies: false } | { applies: true; passed: boolean; failedRules: FailedRule[] };

/**
 * Runs one test against one entity. Pure: the caller loads the entity and stores the outcome. Without `withValues`
 * failed rules say how many values were found but not which (the caller may not read the entity).
 */
export function evaluateTest(definition: ParsedDefinition, entity: EntitySnapshot, withValues = true): TestOutcome {
  if (!appliesToEntityType(definition, entity.entityType)) return { applies: false };
  const { conditions } = definition.on;
  if (conditions && !checkPredicate(conditions, "on.conditions", true, entity).ok) return { applies: false };
  const verdict = checkPredicate(definition.rules, "rules", true, entity, withValues);
  return { applies: true, passed: verdict.ok, failedRules: verdict.explain() };
}

/**
 * Whether `on.types` names the entity's type. Case and underscores are ignored so that GraphQL's enum spelling
 * (DATASET, DATA_JOB) selects the same entities as the registry's (dataset, dataJob). Exported so that choosing
 * which tests to run uses the same rule as evaluating them.
 */
export function appliesToEntityType(definition: ParsedDefinition, entityType: string): boolean {
  return definition.on.types.some((type) => entityTypeMatches(type, entityType));
}

/**
 * Whether a type named in `on.types` names `entityType`, by the rule above. Exported so that callers mapping
 * `on.types` onto a registry's entity types (to refuse unknown ones, or to store canonical names) agree with it.
 */
export function entityTypeMatches(onType: string, entityType: string): boolean {
  return typeKey(onType) === typeKey(entityType);
}

/**
 * type → its key, for the few types in use (on.types and entity types): an evaluation compares them for every test of
 * every entity, where rebuilding the key each time was a few percent of an evaluation thread's CPU.
 */
const typeKeys = new Map<string, string>();
const MAX_TYPE_KEYS = 1024;

function typeKey(type: string): string {
  let key = typeKeys.get(type);
  if (key === undefined) {
    key = type.replace(/_/g, "").toLowerCase();
    if (typeKeys.size >= MAX_TYPE_KEYS) typeKeys.clear();
    typeKeys.set(type, key);
  }
  return key;
}
