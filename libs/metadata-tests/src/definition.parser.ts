import { isPropertyPredicate, type ParsedDefinition, type Predicate } from "./definition.types";
import { DEFINITION_LIMITS, checkDefinitionShape } from "./definition-limits";
import { readDefinitionText } from "./definition-text";
import { parsePredicate } from "./predicate.parser";
import { ProblemList, describeValue, isRecord } from "./problem-list";
import { TestDefinitionError } from "./test-definition.error";
import { parseActions } from "./action.parser";

/**
 * Parses definition text (JSON or YAML) into the normalized definition, or throws a TestDefinitionError naming every
 * problem and where it is.
 */
export function parseTestDefinition(text: string): ParsedDefinition {
  return definitionFromJson(readDefinitionText(text));
}

/**
 * Validates an already-decoded definition: the stored normalized JSON when it is read back, or a JSON object received
 * directly. Stored definitions are re-checked rather than cast, so a row written by an older version cannot make the
 * evaluator misbehave.
 */
export function definitionFromJson(json: unknown): ParsedDefinition {
  // Before the recursive parse: nesting and size bounds are what make recursing safe.
  checkDefinitionShape(json);
  const problems = new ProblemList();
  const definition = parseDefinition(json, problems);
  if (definition) checkCounts(definition, problems);
  if (!definition || !problems.isEmpty) throw new TestDefinitionError(problems.problems);
  return definition;
}

/**
 * The limits on the definition as a whole: predicates in on.conditions and rules together, their operands, and the
 * normalized JSON that is stored and sent to the evaluation worker (patterns: see the predicate parser). The shape
 * check has already bounded what this walks and serializes.
 */
function checkCounts(definition: ParsedDefinition, problems: ProblemList): void {
  let predicates = 0;
  let operands = 0;
  let operandCharacters = 0;
  const count = (predicate: Predicate): void => {
    predicates++;
    if (isPropertyPredicate(predicate)) {
      const values = predicate.values ?? (predicate.value === undefined ? [] : [predicate.value]);
      operands += values.length;
      for (const value of values) operandCharacters += value.length;
      return;
    }
    if ("not" in predicate) count(predicate.not);
    else ("and" in predicate ? predicate.and : predicate.or).forEach(count);
  };
  if (definition.on.conditions) count(definition.on.conditions);
  count(definition.rules);
  if (predicates > DEFINITION_LIMITS.predicates) {
    problems.add("", `${predicates} predicates, more than the limit of ${DEFINITION_LIMITS.predicates}`);
  }
  if (operands > DEFINITION_LIMITS.operands) {
    problems.add("", `${operands} operands in all predicates, more than the limit of ${DEFINITION_LIMITS.operands}`);
  }
  if (operandCharacters > DEFINITION_LIMITS.operandCharacters) {
    problems.add(
      "",
      `${operandCharacters} characters of operands in all predicates, more than the limit of ${DEFINITION_LIMITS.operandCharacters}`,
    );
  }
  if (!problems.isEmpty) return;
  const bytes = Buffer.byteLength(JSON.stringify(definition), "utf8");
  if (bytes > DEFINITION_LIMITS.normalizedBytes) {
    problems.add(
      "",
      `the normalized definition is ${bytes} bytes of JSON, more than the limit of ${DEFINITION_LIMITS.normalizedBytes}`,
    );
  }
}

const DEFINITION_KEYS = ["on", "rules", "actions"];
const ON_KEYS = ["types", "conditions", "match"];

function parseDefinition(raw: unknown, problems: ProblemList): ParsedDefinition | undefined {
  if (!isRecord(raw)) {
    problems.add("", `the definition must be an object with 'on' and 'rules', got ${describeValue(raw)}`);
    return undefined;
  }
  rejectUnknownKeys(raw, DEFINITION_KEYS, "", problems);
  if (!("on" in raw))
    problems.add("on", "missing: say which entity types the test applies to, e.g. on: {types: [dataset]}");
  if (!("rules" in raw)) problems.add("rules", "missing: say what an entity must satisfy to pass");
  const on = "on" in raw ? parseOn(raw.on, problems) : undefined;
  const rules = "rules" in raw ? parsePredicate(raw.rules, "rules", problems) : undefined;
  const actions = "actions" in raw ? parseActions(raw.actions, problems) : undefined;
  if (!on || !rules) return undefined;
  return actions ? { on, rules, actions } : { on, rules };
}

function parseOn(raw: unknown, problems: ProblemList): ParsedDefinition["on"] | undefined {
  if (!isRecord(raw)) {
    problems.add("on", `must be an object such as {types: [dataset]}, got ${describeValue(raw)}`);
    return undefined;
  }
  rejectUnknownKeys(raw, ON_KEYS, "on", problems);
  const types = parseTypes(raw.types, problems);
  let conditions: Predicate | undefined;
  if ("conditions" in raw && "match" in raw) {
    problems.add("on", "both 'conditions' and its legacy alias 'match' are given, keep one");
  } else if ("conditions" in raw || "match" in raw) {
    const key = "conditions" in raw ? "conditions" : "match";
    conditions = parsePredicate(raw[key], `on.${key}`, problems);
  }
  if (!types) return undefined;
  return conditions ? { types, conditions } : { types };
}

function parseTypes(raw: unknown, problems: ProblemList): string[] | undefined {
  if (raw === undefined) {
    problems.add("on.types", "missing: list the entity types the test applies to, e.g. [dataset]");
    return undefined;
  }
  if (!Array.isArray(raw)) {
    problems.add("on.types", `must be a list of entity types, got ${describeValue(raw)}`);
    return undefined;
  }
  // A test that applies to nothing would silently never run.
  if (raw.length === 0) {
    problems.add("on.types", "must list at least one entity type");
    return undefined;
  }
  const types: string[] = [];
  raw.forEach((type, index) => {
    if (typeof type === "string" && type.trim() !== "") types.push(type.trim());
    else
      problems.add(`on.types[${index}]`, `must be an entity type name such as 'dataset', got ${describeValue(type)}`);
  });
  return types.length === raw.length ? [...new Set(types)] : undefined;
}

// Unknown keys are refused rather than ignored: a misspelled key ('rule', 'condition') would otherwise silently
// change what the test checks.
function rejectUnknownKeys(
  raw: Record<string, unknown>,
  allowed: readonly string[],
  path: string,
  problems: ProblemList,
) {
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) {
      problems.add(path ? `${path}.${key}` : key, `unknown key (expected ${allowed.join(", ")})`);
    }
  }
}
