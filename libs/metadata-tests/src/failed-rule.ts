import { expectedValues, type PropertyPredicate } from "./definition.types";
import { OPERAND_SHAPE, type Operator } from "./operators";

/** characters of one value a failed rule shows (its JSON; a string's text), then cut and marked (RESULT_LIMITS) */
export const VALUE_CHARACTERS = 200;

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
  /**
   * the values found (at most MAX_ACTUAL of them, each cut by cutValue), empty when the property has no value, or when
   * the caller may not read the entity (actualCount then still says how many there were)
   */
  actual: unknown[];
  /** how many values were found in all */
  actualCount: number;
  /** the same in one sentence, e.g. `Expected ownership.owners.type to equal "TECHNICAL_OWNER", found "DATAOWNER"` */
  message: string;
}

// Failures are stored in the entity's testResults aspect: a property fanning out over thousands of schema fields
// must not copy all of them there.
export const MAX_ACTUAL = 20;

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

/**
 * The failed rule of `predicate`, with the values found (cut) when `withValues`, else only their count: the caller may
 * not read the entity (GET_ENTITY), and values never built cannot leak.
 */
export function failedRule(
  predicate: PropertyPredicate,
  path: string,
  found: readonly unknown[],
  negated: boolean,
  withValues = true,
): FailedRule {
  const operands = expectedValues(predicate);
  const expected = operands.length > 0 ? operands : undefined;
  const shown = withValues ? found.slice(0, MAX_ACTUAL).map(cutValue) : [];
  return {
    path,
    property: predicate.property,
    operator: predicate.operator,
    negated,
    ...(expected && { expected }),
    actual: shown,
    actualCount: found.length,
    message: describeFailure(
      predicate.property,
      predicate.operator,
      expected,
      shown,
      found.length,
      negated,
      withValues,
    ),
  };
}

/**
 * The rule as a caller who may not read the entity sees it: what failed and how many values were found, no values.
 * For results computed with values (stored ones, task rows) shown to such a caller.
 */
export function withoutValues(rule: FailedRule): FailedRule {
  return {
    ...rule,
    actual: [],
    message: describeFailure(rule.property, rule.operator, rule.expected, [], rule.actualCount, rule.negated, false),
  };
}

/**
 * A value as a failed rule shows it: itself when its JSON (a string: its text) has at most
 * VALUE_CHARACTERS characters, else the text of its first that many characters marked as cut:
 * `<first 200 characters>… (cut from <n> characters)`. A 200 KB description in 50 failing rules answered 10 MB.
 */
export function cutValue(value: unknown): unknown {
  const limit = VALUE_CHARACTERS;
  if (typeof value === "string") return value.length <= limit ? value : cut(value);
  if (value === null || typeof value === "number" || typeof value === "boolean") return value;
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= limit ? value : cut(text);
}

function cut(text: string): string {
  let end = VALUE_CHARACTERS;
  // Never split a surrogate pair: half of one is not text.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… (cut from ${text.length} characters)`;
}

function describeFailure(
  property: string,
  operator: Operator,
  expected: readonly string[] | undefined,
  shown: readonly unknown[],
  count: number,
  negated: boolean,
  withValues: boolean,
): string {
  const verb = `${negated ? "not " : ""}to ${PHRASES[operator] ?? operator}`;
  const operands = expected ? ` ${describeOperands(operator, expected)}` : "";
  const outcome =
    count === 0
      ? "but it has no value"
      : withValues
        ? `found ${describeFound(shown, count)}`
        : `and it has ${count} value${count === 1 ? "" : "s"} (not shown: reading them needs GET_ENTITY)`;
  return `Expected ${property} ${verb}${operands}, ${outcome}`;
}

function describeOperands(operator: Operator, expected: readonly string[]): string {
  // Thresholds are numbers (the parser checked), so they read better unquoted.
  if (OPERAND_SHAPE[operator] === "threshold") return expected.join(", ");
  const quoted = expected.map(show);
  if (operator === "contains_any") return `[${quoted.join(", ")}]`;
  return quoted.length === 1 ? (quoted[0] ?? "") : `one of [${quoted.join(", ")}]`;
}

function describeFound(shown: readonly unknown[], count: number): string {
  const listed = shown.map(show).join(", ");
  return count > shown.length ? `${listed} and ${count - shown.length} more` : listed;
}

/** A value in a message: its JSON, cut as cutValue cuts (values shown are cut already; operands may be long too). */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= VALUE_CHARACTERS ? text : `${text.slice(0, VALUE_CHARACTERS)}…`;
}
