import type { Predicate, PropertyPredicate } from "./definition.types";
import { OPERAND_SHAPE, OPERATORS, isOperator, type Operator } from "./operators";
import { DEFINITION_LIMITS } from "./definition-limits";
import { describeValue, isRecord, quoteKeys, type ProblemList } from "./problem-list";
import { regexSyntaxError } from "./regex-cache";
import { regexCompileCost } from "./regex-cost";
import { asNumber } from "./value-coercion";

const COMBINATORS = ["and", "or", "not"] as const;
type Combinator = (typeof COMBINATORS)[number];

/** Canonical leaf keys with the legacy names DataHub definitions still use. */
const PROPERTY_KEYS = ["property", "query"] as const;
const OPERATOR_KEYS = ["operator", "operation"] as const;
const LEAF_KEYS: readonly string[] = [...PROPERTY_KEYS, ...OPERATOR_KEYS, "value", "values"];

const PREDICATE_SHAPES = "{and: [...]}, {or: [...]}, {not: ...}, {property, operator, value} or a list (meaning and)";

/**
 * Validates and normalizes a predicate written at `path`. Returns undefined when it is invalid; the reasons are in
 * `problems`. Paths name keys as the user wrote them (legacy aliases included), so a message points at real text.
 */
export function parsePredicate(raw: unknown, path: string, problems: ProblemList): Predicate | undefined {
  if (Array.isArray(raw)) return parseList("and", raw, path, problems);
  if (!isRecord(raw)) {
    problems.add(path, `expected a predicate (${PREDICATE_SHAPES}), got ${describeValue(raw)}`);
    return undefined;
  }
  const keys = Object.keys(raw);
  const combinators = COMBINATORS.filter((name) => name in raw);
  if (combinators.length > 1) {
    problems.add(path, `${quoteKeys(combinators)} cannot share one object, nest them instead`);
    return undefined;
  }
  const [combinator] = combinators;
  if (combinator) {
    const extra = keys.filter((key) => key !== combinator);
    if (extra.length > 0) {
      problems.add(path, `unexpected ${quoteKeys(extra)} beside '${combinator}'`);
      return undefined;
    }
    if (combinator === "not") {
      const inner = parsePredicate(raw.not, `${path}.not`, problems);
      return inner && { not: inner };
    }
    const children = raw[combinator];
    if (!Array.isArray(children)) {
      problems.add(`${path}.${combinator}`, `must be a list of predicates, got ${describeValue(children)}`);
      return undefined;
    }
    return parseList(combinator, children, `${path}.${combinator}`, problems);
  }
  if (!keys.some((key) => LEAF_KEYS.includes(key))) {
    problems.add(
      path,
      `expected ${PREDICATE_SHAPES}; found ${keys.length ? `keys ${quoteKeys(keys)}` : "an empty object"}`,
    );
    return undefined;
  }
  return parsePropertyPredicate(raw, path, problems);
}

function parseList(
  combinator: Exclude<Combinator, "not">,
  raw: unknown[],
  listPath: string,
  problems: ProblemList,
): Predicate | undefined {
  // An empty and/or is vacuously true/false: almost certainly a mistake, and a silent one.
  if (raw.length === 0) {
    problems.add(listPath, "must list at least one predicate");
    return undefined;
  }
  const children = raw.map((child, index) => parsePredicate(child, `${listPath}[${index}]`, problems));
  if (!children.every((child): child is Predicate => child !== undefined)) return undefined;
  return combinator === "and" ? { and: children } : { or: children };
}

function parsePropertyPredicate(
  raw: Record<string, unknown>,
  path: string,
  problems: ProblemList,
): PropertyPredicate | undefined {
  const before = problems.problems.length;
  const unknown = Object.keys(raw).filter((key) => !LEAF_KEYS.includes(key));
  for (const key of unknown) {
    problems.add(`${path}.${key}`, "unknown key (a property predicate has property, operator and value or values)");
  }
  const property = parsePropertyName(raw, path, problems);
  const operator = parseOperatorName(raw, path, problems);
  const operands = operator ? parseOperands(operator, raw, path, problems) : undefined;
  if (problems.problems.length > before || !property || !operator || !operands) return undefined;
  return { property, operator, ...operands };
}

/** Reads a key that has a legacy alias; both at once is ambiguous. Returns the key actually used. */
function aliasedKey(
  raw: Record<string, unknown>,
  [canonical, legacy]: readonly [string, string],
  path: string,
  problems: ProblemList,
): string | undefined {
  if (canonical in raw && legacy in raw) {
    problems.add(path, `both '${canonical}' and its legacy alias '${legacy}' are given, keep one`);
    return undefined;
  }
  if (canonical in raw) return canonical;
  if (legacy in raw) return legacy;
  problems.add(path, `missing '${canonical}'`);
  return undefined;
}

function parsePropertyName(raw: Record<string, unknown>, path: string, problems: ProblemList): string | undefined {
  const key = aliasedKey(raw, PROPERTY_KEYS, path, problems);
  if (!key) return undefined;
  const value = raw[key];
  if (typeof value !== "string" || value.trim() === "") {
    problems.add(
      `${path}.${key}`,
      `must be a non-empty string such as 'ownership.owners.owner', got ${describeValue(value)}`,
    );
    return undefined;
  }
  const property = value.trim();
  // Counted before splitting, so that refusing a 1,000-segment property costs no more than reading it.
  let segmentCount = 1;
  for (let index = property.indexOf("."); index !== -1; index = property.indexOf(".", index + 1)) segmentCount++;
  if (segmentCount > DEFINITION_LIMITS.propertySegments) {
    problems.add(
      `${path}.${key}`,
      `${segmentCount} dot-separated segments, more than the limit of ${DEFINITION_LIMITS.propertySegments} for a property`,
    );
    return undefined;
  }
  if (property.length > DEFINITION_LIMITS.propertyLength) {
    problems.add(
      `${path}.${key}`,
      `${property.length} characters, more than the limit of ${DEFINITION_LIMITS.propertyLength} for a property`,
    );
    return undefined;
  }
  const segments = property.split(".");
  if (segments.some((segment) => segment === "")) {
    problems.add(`${path}.${key}`, `'${property}' has an empty path segment`);
    return undefined;
  }
  return property;
}

function parseOperatorName(raw: Record<string, unknown>, path: string, problems: ProblemList): Operator | undefined {
  const key = aliasedKey(raw, OPERATOR_KEYS, path, problems);
  if (!key) return undefined;
  const value = raw[key];
  // Operator names are matched case-insensitively: UIs and older definitions send EQUALS as often as equals.
  const name = typeof value === "string" ? value.trim().toLowerCase() : undefined;
  if (name === undefined || !isOperator(name)) {
    const got = typeof value === "string" ? `'${value}'` : describeValue(value);
    problems.add(`${path}.${key}`, `unknown operator ${got} (valid operators: ${OPERATORS.join(", ")})`);
    return undefined;
  }
  return name;
}

type Operands = Pick<PropertyPredicate, "value" | "values">;

function parseOperands(
  operator: Operator,
  raw: Record<string, unknown>,
  path: string,
  problems: ProblemList,
): Operands | undefined {
  const hasValue = "value" in raw;
  const hasValues = "values" in raw;
  switch (OPERAND_SHAPE[operator]) {
    case "none": {
      if (hasValue || hasValues) {
        const hint = operator === "exists" ? " (to require absence, wrap it: {not: {property, operator: exists}})" : "";
        problems.add(`${path}.${hasValue ? "value" : "values"}`, `'${operator}' takes no value${hint}`);
        return undefined;
      }
      return {};
    }
    case "threshold": {
      if (hasValues) {
        problems.add(`${path}.values`, `'${operator}' compares against a single number: write 'value', not 'values'`);
        return undefined;
      }
      if (!hasValue) {
        problems.add(path, `missing 'value': '${operator}' needs a number to compare against`);
        return undefined;
      }
      const value = parseScalar(raw.value, `${path}.value`, problems);
      if (value === undefined) return undefined;
      if (asNumber(value) === undefined) {
        problems.add(`${path}.value`, `'${operator}' needs a number, got ${JSON.stringify(value)}`);
        return undefined;
      }
      return { value };
    }
    case "list": {
      if (hasValue && !hasValues) {
        problems.add(`${path}.value`, `'${operator}' takes a list: write 'values: [...]'`);
        return undefined;
      }
      return parseValueList(operator, raw, path, problems);
    }
    case "any-of": {
      if (hasValue && hasValues) {
        problems.add(path, "give either 'value' or 'values' (any of a list), not both");
        return undefined;
      }
      if (hasValue) {
        const value = parseScalar(raw.value, `${path}.value`, problems);
        if (value === undefined) return undefined;
        if (operator === "regex_match" && !isValidRegex(value, `${path}.value`, problems)) return undefined;
        return { values: [value] };
      }
      if (!hasValues) {
        problems.add(
          path,
          `missing 'value' (or 'values' for any of a list): '${operator}' needs something to compare against`,
        );
        return undefined;
      }
      return parseValueList(operator, raw, path, problems);
    }
  }
}

function parseValueList(
  operator: Operator,
  raw: Record<string, unknown>,
  path: string,
  problems: ProblemList,
): Operands | undefined {
  if (!("values" in raw)) {
    problems.add(path, `missing 'values': '${operator}' needs a list to compare against`);
    return undefined;
  }
  const list = raw.values;
  if (!Array.isArray(list)) {
    problems.add(`${path}.values`, `must be a list, got ${describeValue(list)} (use 'value' for a single one)`);
    return undefined;
  }
  if (list.length === 0) {
    problems.add(`${path}.values`, "must list at least one value");
    return undefined;
  }
  if (list.length > DEFINITION_LIMITS.valuesPerPredicate) {
    problems.add(
      `${path}.values`,
      `${list.length} values, more than the limit of ${DEFINITION_LIMITS.valuesPerPredicate} for one predicate`,
    );
    return undefined;
  }
  const values = list.map((item, index) => {
    const value = parseScalar(item, `${path}.values[${index}]`, problems);
    if (
      value !== undefined &&
      operator === "regex_match" &&
      !isValidRegex(value, `${path}.values[${index}]`, problems)
    ) {
      return undefined;
    }
    return value;
  });
  if (!values.every((value): value is string => value !== undefined)) return undefined;
  return { values };
}

/** Operands are kept as strings: entity metadata compares as text, and numerically when both sides are numbers. */
function parseScalar(raw: unknown, path: string, problems: ProblemList): string | undefined {
  if (typeof raw === "string") {
    if (raw.length <= DEFINITION_LIMITS.valueLength) return raw;
    problems.add(path, `${raw.length} characters, more than the limit of ${DEFINITION_LIMITS.valueLength} for a value`);
    return undefined;
  }
  if (typeof raw === "boolean") return String(raw);
  if (typeof raw === "number" && Number.isFinite(raw)) return String(raw);
  const hint = Array.isArray(raw) && path.endsWith(".value") ? " (use 'values' for a list)" : "";
  problems.add(path, `must be a string, number or boolean, got ${describeValue(raw)}${hint}`);
  return undefined;
}

// Refused when the test is saved rather than discovered when the first entity is evaluated: a pattern the linear-time
// engine cannot run (backreferences, lookaround) included.
function isValidRegex(pattern: string, path: string, problems: ProblemList): boolean {
  if (pattern.length > DEFINITION_LIMITS.patternLength) {
    problems.add(
      path,
      `a regular expression of ${pattern.length} characters, more than the limit of ${DEFINITION_LIMITS.patternLength}`,
    );
    return false;
  }
  if (++problems.patterns > DEFINITION_LIMITS.patterns) {
    // Reported once, at the first pattern past the limit.
    if (problems.patterns === DEFINITION_LIMITS.patterns + 1) {
      problems.add(path, `more than the limit of ${DEFINITION_LIMITS.patterns} regex_match patterns in one definition`);
    }
    return false;
  }
  // Compiling runs synchronously on the caller's event loop, and some legal patterns take seconds: their cost is
  // estimated from the text first, per pattern and for the definition's patterns together.
  const cost = regexCompileCost(pattern);
  if (cost > DEFINITION_LIMITS.patternCost) {
    problems.add(
      path,
      `a regular expression whose repetitions and character classes expand to about ${cost} instructions, more than the limit of ${DEFINITION_LIMITS.patternCost} (x{n,m} repeats x m times; ., negated classes and \\p{…} weigh more)`,
    );
    return false;
  }
  // Past the total already: reported at the pattern that crossed it.
  if (problems.patternCost > DEFINITION_LIMITS.patternCostTotal) return false;
  problems.patternCost += cost;
  if (problems.patternCost > DEFINITION_LIMITS.patternCostTotal) {
    problems.add(
      path,
      `regular expressions expanding to about ${problems.patternCost} instructions together, more than the limit of ${DEFINITION_LIMITS.patternCostTotal} for one definition`,
    );
    return false;
  }
  const error = regexSyntaxError(pattern);
  if (error) problems.add(path, `invalid regular expression ${JSON.stringify(pattern)}: ${error}`);
  return error === undefined;
}
