import type { Operator } from "./operators";

/**
 * The normalized definition. It is plain JSON (stored as is in a Json column) and is itself a valid definition:
 * canonical key names only, a bare list already turned into `and`, operands as strings.
 */
export interface ParsedDefinition {
  on: { types: string[]; conditions?: Predicate };
  rules: Predicate;
  actions?: TestActions;
}

export type Predicate = AndPredicate | OrPredicate | NotPredicate | PropertyPredicate;

export interface AndPredicate {
  and: Predicate[];
}

export interface OrPredicate {
  or: Predicate[];
}

export interface NotPredicate {
  not: Predicate;
}

/** A leaf: `value` for thresholds (greater_than, less_than), `values` for the others that take operands. */
export interface PropertyPredicate {
  property: string;
  operator: Operator;
  value?: string;
  values?: string[];
}

/**
 * What pushing a result does to the entity (action-catalogue.ts): the actions of the outcome, applied by the evaluation
 * worker in the push's transaction. Evaluation itself only plans them.
 */
export interface TestActions {
  passing: TestAction[];
  failing: TestAction[];
}

/** DataHub's TestAction: a type from ACTION_TYPES (canonical name) and its params, every param a list of strings. */
export interface TestAction {
  type: string;
  params: Record<string, string[]>;
}

export function isPropertyPredicate(predicate: Predicate): predicate is PropertyPredicate {
  return "property" in predicate;
}

/** The operands of a leaf as one list, whichever of `value` / `values` holds them. */
export function expectedValues(predicate: PropertyPredicate): string[] {
  if (predicate.values) return predicate.values;
  return predicate.value === undefined ? [] : [predicate.value];
}
