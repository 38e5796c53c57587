import type { EntityEvaluation } from "./entity-evaluation";
import { VALUE_CHARACTERS, withoutValues, type FailedRule } from "./failed-rule";
import type { StoredTestResult, TestResultsAspect } from "./test-results";

/**
 * The sizes of what an evaluation answers and stores (docs/limits.md "Evaluation results"). Every value a failed rule
 * shows is cut, so a rule's size no longer follows the entity's; what is left grows with the rules and tests, hence a
 * cap per entity and per answer. Without them one evaluate of a 200 KB description answered 10 MB, and a reply of
 * 80 MB made Redis drop the gateway's subscriber connection (its pub/sub output buffer limit).
 */
export const RESULT_LIMITS = {
  /** characters of one value a failed rule shows (its JSON; a string's text), then cut and marked */
  valueCharacters: VALUE_CHARACTERS,
  /** UTF-8 bytes of one entity's result as answered (its JSON), and of its stored testResults */
  entityBytes: 512 * 1024,
  /** UTF-8 bytes of one request's results together (a batchEvaluate's answer; a task row's result) */
  answerBytes: 4 * 1024 * 1024,
} as const;

/** UTF-8 bytes of a JSON text; the length alone when it cannot be over `limit` (no UTF-16 unit takes over 3 bytes). */
export function utf8Bytes(text: string, limit: number): number {
  return text.length * 3 <= limit ? text.length : Buffer.byteLength(text, "utf8");
}

/**
 * Why an entity's result is refused, naming the limit and the test weighing most in it (the one to narrow or evaluate
 * alone); only called past the limit, so its cost is the refusal's.
 */
export function entityResultTooLarge(evaluation: EntityEvaluation, bytes: number): string {
  let heaviest: { test: string; bytes: number } | undefined;
  for (const result of evaluation.failing) {
    const size = Buffer.byteLength(JSON.stringify(result), "utf8");
    if (!heaviest || size > heaviest.bytes) heaviest = { test: result.test, bytes: size };
  }
  const which = heaviest ? `; test ${heaviest.test} alone is ${heaviest.bytes} bytes` : "";
  return (
    `The result for ${evaluation.urn} is ${bytes} bytes, more than the limit of ${RESULT_LIMITS.entityBytes} bytes ` +
    `per entity (every value shown is already cut to ${RESULT_LIMITS.valueCharacters} characters)${which}. ` +
    `Evaluate fewer tests at once (testUrns), or a test with fewer rules.`
  );
}

/** Why a request's results are refused together: their size and the limit of one answer. */
export function answerTooLarge(urns: number, bytes: number): string {
  return (
    `The results for the ${urns} entities of this request are ${bytes} bytes, more than the limit of ` +
    `${RESULT_LIMITS.answerBytes} bytes per answer. Evaluate fewer entities (urns) or tests (testUrns) at once.`
  );
}

/**
 * A stored testResults value within RESULT_LIMITS.entityBytes: each test's entry is bounded by the answer's check,
 * but the aspect also keeps other tests' entries (or a runTest pushed a result nobody was answered). Past the limit,
 * the heaviest failing entries lose their values (counts and messages stay), then their failed rules (a count of them
 * stays in `failedRulesOmitted`), until it fits. Deterministic, so an unchanged outcome still writes nothing.
 */
export function boundedTestResults(aspect: TestResultsAspect): { value: TestResultsAspect; json: string } {
  const json = JSON.stringify(aspect);
  if (utf8Bytes(json, RESULT_LIMITS.entityBytes) <= RESULT_LIMITS.entityBytes) return { value: aspect, json };
  // Sizes kept per entry, so each step re-measures one entry, not the whole aspect: the JSON of the aspect is that of
  // the aspect without failing entries, plus each entry's, plus the commas between them.
  const failing = [...aspect.failing];
  const sizes = failing.map((entry) => Buffer.byteLength(JSON.stringify(entry), "utf8"));
  const byWeight = sizes
    .map((bytes, index) => ({ index, bytes }))
    .sort((a, b) => b.bytes - a.bytes || a.index - b.index);
  let total =
    Buffer.byteLength(JSON.stringify({ ...aspect, failing: [] }), "utf8") +
    sizes.reduce((sum, bytes) => sum + bytes, 0) +
    Math.max(0, failing.length - 1);
  fitting: for (const step of [valuesDropped, rulesDropped]) {
    for (const { index } of byWeight) {
      if (total <= RESULT_LIMITS.entityBytes) break fitting;
      failing[index] = step(failing[index]!);
      const bytes = Buffer.byteLength(JSON.stringify(failing[index]), "utf8");
      total += bytes - sizes[index]!;
      sizes[index] = bytes;
    }
  }
  const value = { ...aspect, failing };
  return { value, json: JSON.stringify(value) };
}

function valuesDropped(entry: StoredTestResult): StoredTestResult {
  return entry.failedRules ? { ...entry, failedRules: entry.failedRules.map(withoutValues) } : entry;
}

function rulesDropped(entry: StoredTestResult): StoredTestResult {
  const { failedRules, ...rest } = entry;
  return { ...rest, failedRulesOmitted: failedRules?.length ?? 0 };
}

/** An evaluation as a caller who may not read the entity sees it: its failed rules without values (withoutValues). */
export function evaluationWithoutValues(evaluation: EntityEvaluation): EntityEvaluation {
  if (evaluation.failing.length === 0) return evaluation;
  return {
    ...evaluation,
    failing: evaluation.failing.map((result) => ({ ...result, failedRules: result.failedRules.map(withoutValues) })),
  };
}

/**
 * Any stored JSON holding evaluations or testResults (a task row's result `{results: {urn: evaluation}}`, a testResults
 * aspect), its failed rules without values, everything else as it is: for callers without GET_ENTITY reading what was
 * stored with values. Tolerant of shapes it does not know (left as they are).
 */
export function storedResultsWithoutValues(value: unknown): unknown {
  if (!isRecord(value)) return value;
  if (isRecord(value.results)) {
    const results: Record<string, unknown> = {};
    for (const [urn, evaluation] of Object.entries(value.results))
      results[urn] = storedResultsWithoutValues(evaluation);
    return { ...value, results };
  }
  if (!Array.isArray(value.failing)) return value;
  return {
    ...value,
    failing: value.failing.map((entry: unknown) =>
      isRecord(entry) && Array.isArray(entry.failedRules)
        ? {
            ...entry,
            failedRules: entry.failedRules.map((rule: unknown) => (isRecord(rule) ? ruleWithoutValues(rule) : rule)),
          }
        : entry,
    ),
  };
}

function ruleWithoutValues(rule: Record<string, unknown>): Record<string, unknown> {
  const actualCount =
    typeof rule.actualCount === "number" ? rule.actualCount : Array.isArray(rule.actual) ? rule.actual.length : 0;
  const shaped = withoutValues({
    path: String(rule.path ?? ""),
    property: String(rule.property ?? ""),
    operator: String(rule.operator ?? "") as FailedRule["operator"],
    negated: rule.negated === true,
    ...(Array.isArray(rule.expected) && { expected: rule.expected.filter((v): v is string => typeof v === "string") }),
    actual: [],
    actualCount,
    message: "",
  });
  return { ...rule, actual: [], actualCount, message: shaped.message };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
