import { isRecord } from "./problem-list";
import { TestDefinitionError } from "./test-definition.error";

/**
 * The sizes a test definition may have. DataHub definitions are a few hundred bytes with a handful of predicates, so
 * real users are far from every one of these; they exist so that the worst definition a MANAGE_TESTS holder can save
 * is cheap to validate, store and evaluate. The parser enforces them on the text the gateway receives and again on
 * the stored JSON the worker loads, so a row saved before a limit existed fails cleanly instead of hogging a worker.
 */
export const DEFINITION_LIMITS = {
  /** UTF-8 bytes of the definition text */
  bytes: 65_536,
  /** levels of nested objects and lists, the definition itself being level 1 */
  depth: 64,
  /** and / or / not / property predicates in on.conditions and rules together */
  predicates: 200,
  /** characters of a property path */
  propertyLength: 512,
  /** dot-separated segments of a property path: key expansion works on every span of segments */
  propertySegments: 32,
  /** operands of one predicate (`values`) */
  valuesPerPredicate: 1_000,
  /** characters of one operand */
  valueLength: 4_096,
  /** characters of one regex_match pattern */
  patternLength: 1_000,
  /** regex_match patterns in one definition: each is compiled when the test is saved and when it is loaded */
  patterns: 100,
  /** characters of a value a pattern searches: only that many leading characters are searched */
  regexSubjectLength: 16_384,
  // The definition once YAML aliases are resolved: an alias repeats what it names in the decoded value, so 64 KiB of
  // text can stand for megabytes (the yaml library's maxAliasCount only bounds aliases nested in aliases, not the size
  // of what one names). Text without aliases never reaches the character and byte limits: its operands hold fewer
  // characters than its bytes, and normalizing at most doubles it (`[1,2]` becomes `["1","2"]`).
  /** operands (`value`/`values`) of all predicates together */
  operands: 10_000,
  /** characters of all operands together */
  operandCharacters: 65_536,
  /** characters of every key and string of the decoded definition, counted before parsing it */
  expandedCharacters: 131_072,
  /** UTF-8 bytes of the normalized definition's JSON, as stored and as sent to the evaluation worker */
  normalizedBytes: 131_072,
  /** estimated compile cost of one regex_match pattern (see regex-cost.ts), ~20 µs of re2-wasm (re2js: less) */
  patternCost: 2_500,
  /** estimated compile cost of all regex_match patterns of one definition together */
  patternCostTotal: 5_000,
  /** actions of a definition, passing and failing together: each can write an aspect of every entity pushed */
  actions: 50,
  /** values of one action parameter (tags, terms or owners one action adds or removes) */
  valuesPerAction: 100,
  /** characters of one action parameter value (an urn is bounded tighter still: 512 bytes URL-encoded) */
  actionValueLength: 1_024,
} as const;

/** Refuses text longer than DEFINITION_LIMITS.bytes, before anything parses it. */
export function checkDefinitionBytes(text: string): void {
  // A cheap upper bound first: no string of at most limit/3 UTF-16 units can exceed the limit in UTF-8.
  if (text.length <= DEFINITION_LIMITS.bytes / 3) return;
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > DEFINITION_LIMITS.bytes) {
    throw new TestDefinitionError([
      { path: "", message: `the definition is ${bytes} bytes, more than the limit of ${DEFINITION_LIMITS.bytes}` },
    ]);
  }
}

/**
 * Refuses a decoded definition nested deeper than DEFINITION_LIMITS.depth, holding more values than its text could
 * within the byte limit (a stored row is JSON, not text, so this is its size check), or more characters of keys and
 * strings than DEFINITION_LIMITS.expandedCharacters. A value reached twice (a YAML alias) is counted each time, as the
 * parser and the stored JSON will repeat it, and the walk stops as soon as a count is past its limit: refusing 99
 * aliases of a 56 KB list costs a few of its uses, not building the megabytes. Iterative, so that it runs before the
 * recursive parser and evaluator: 8,000 nested `not` are refused here rather than overflowing their stacks.
 */
export function checkDefinitionShape(root: unknown): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: "", depth: 1 }];
  // Text within the byte limit cannot hold more values than it has bytes; a stored row that does was never accepted.
  let budget = DEFINITION_LIMITS.bytes;
  let characters = 0;
  const countCharacters = (count: number): void => {
    characters += count;
    if (characters > DEFINITION_LIMITS.expandedCharacters) {
      throw new TestDefinitionError([
        {
          path: "",
          message: `the definition expands to more than ${DEFINITION_LIMITS.expandedCharacters} characters of keys and values (the limit; a YAML alias counts each time it is used)`,
        },
      ]);
    }
  };
  while (stack.length > 0) {
    if (--budget < 0) {
      throw new TestDefinitionError([
        { path: "", message: `the definition holds more than ${DEFINITION_LIMITS.bytes} values (the byte limit)` },
      ]);
    }
    const { value, path, depth } = stack.pop()!;
    if (typeof value === "string") countCharacters(value.length);
    const children: Array<[string, unknown]> = Array.isArray(value)
      ? value.map((child, index) => [`${path}[${index}]`, child])
      : isRecord(value)
        ? Object.entries(value).map(([key, child]) => {
            countCharacters(key.length);
            return [path ? `${path}.${key}` : key, child];
          })
        : [];
    if (children.length === 0) continue;
    if (depth >= DEFINITION_LIMITS.depth) {
      throw new TestDefinitionError([
        { path, message: `nested more than ${DEFINITION_LIMITS.depth} levels deep (the limit)` },
      ]);
    }
    for (const [childPath, child] of children) stack.push({ value: child, path: childPath, depth: depth + 1 });
  }
}

/**
 * The deepest nesting of YAML flow collections ([ ] and { }) in `text`, outside quotes and comments, stopping once
 * past `limit`. The yaml library composes documents recursively, so a few hundred levels overflow its stack; this
 * scan lets such text be refused by the nesting limit instead. Brackets inside plain scalars count too, which can
 * only overestimate, and only a definition far from any real one reaches the limit that way.
 */
export function flowNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let quote: string | undefined;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (quote) {
      if (char === "\\" && quote === '"') index++;
      else if (char === quote) quote = undefined;
      continue;
    }
    if (char === '"' || char === "'") quote = char;
    else if (char === "#" && (index === 0 || /\s/.test(text[index - 1]!))) {
      const end = text.indexOf("\n", index);
      index = end === -1 ? text.length : end;
    } else if (char === "[" || char === "{") {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((char === "]" || char === "}") && depth > 0) depth--;
  }
  return deepest;
}
