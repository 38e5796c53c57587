import { expectedValues, type PropertyPredicate } from "./definition.types";
import { OPERAND_SHAPE, type Operator } from "./operators";

/**
 * A leaf predicate that made the test fail, with what it expected and what the entity actually has, so that a user
 * can fix the metadata without re-deriving the evaluation.
 */
export interface FailedRule {
  /** where the predicate sits in the normalized definition, e.g. `rules.and[1]` (a bare list reads as `and`) */
  path: string;
  property: string;
  operator: Operator;
  /** true when the predicate failed by holding inside a `not` */
  negated: boolean;
  /** the operands, absent for exists / is_true / is_false */
  expected?: string[];
  /** the values found (at most MAX_ACTUAL of them), empty when the property has no value */
  actual: unknown[];
  /** how many values were found in all */
  actualCount: number;
  /** the same in one sentence, e.g. `Expected ownership.owners.type to equal "TECHNICAL_OWNER", found "DATAOWNER"` */
  message: string;
}

// Failures are stored in the entity's testResults aspect: a property fanning out over thousands of schema fields
// must not copy all of them there.
export const MAX_ACTUAL = 20;
const MAX_TEXT = 200;

const PHRASES: Record<Operator, string> = {
  equals: "equal",
  starts_with: "start with",
  contains_str: "contain",
  contains_any: "contain any of",
  regex_match: "match",
  greater_than: "be greater than",
  less_than: "be less than",
  exists: "exist",
  is_true: "be true",
  is_false: "be false",
};

export function failedRule(
  predicate: PropertyPredicate,
  path: string,
  found: readonly unknown[],
  negated: boolean,
): FailedRule {
  const operands = expectedValues(predicate);
  const expected = operands.length > 0 ? operands : undefined;
  return {
    path,
    property: predicate.property,
    operator: predicate.operator,
    negated,
    ...(expected && { expected }),
    actual: found.slice(0, MAX_ACTUAL),
    actualCount: found.length,
    message: describeFailure(predicate, expected, found, negated),
  };
}

function describeFailure(
  predicate: PropertyPredicate,
  expected: readonly string[] | undefined,
  found: readonly unknown[],
  negated: boolean,
): string {
  const verb = `${negated ? "not " : ""}to ${PHRASES[predicate.operator]}`;
  const operands = expected ? ` ${describeOperands(predicate.operator, expected)}` : "";
  const outcome = found.length === 0 ? "but it has no value" : `found ${describeFound(found)}`;
  return `Expected ${predicate.property} ${verb}${operands}, ${outcome}`;
}

function describeOperands(operator: Operator, expected: readonly string[]): string {
  // Thresholds are numbers (the parser checked), so they read better unquoted.
  if (OPERAND_SHAPE[operator] === "threshold") return expected.join(", ");
  const quoted = expected.map(show);
  if (operator === "contains_any") return `[${quoted.join(", ")}]`;
  return quoted.length === 1 ? (quoted[0] ?? "") : `one of [${quoted.join(", ")}]`;
}

function describeFound(found: readonly unknown[]): string {
  const shown = found.slice(0, MAX_ACTUAL).map(show).join(", ");
  return found.length > MAX_ACTUAL ? `${shown} and ${found.length - MAX_ACTUAL} more` : shown;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}
