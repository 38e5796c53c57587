import type { EntityEvaluation } from "./entity-evaluation";
import { cutValue, MAX_ACTUAL, type FailedRule } from "./failed-rule";

/**
 * An entity's `testResults` aspect, in DataHub's shape: the latest outcome of each test that was pushed for it.
 * Failing entries also carry `failedRules` (DataHub does not say why a test failed; extra fields leave its shape intact).
 * There is no timestamp per entry on purpose: pushing the same outcome again then changes nothing, so it writes no new
 * aspect version.
 */
export interface TestResultsAspect {
  passing: StoredTestResult[];
  failing: StoredTestResult[];
}

export interface StoredTestResult {
  test: string;
  type: "SUCCESS" | "FAILURE";
  failedRules?: FailedRule[];
  /** how many failed rules were left out to keep the aspect within RESULT_LIMITS.entityBytes (boundedTestResults) */
  failedRulesOmitted?: number;
}

/**
 * Reads a stored aspect value. Tolerant: entries that are not `{test: string, ...}` are dropped rather than failing a
 * push, because the aspect can also arrive through ingestion, written by anything.
 */
export function readTestResults(value: unknown): TestResultsAspect {
  const record = isRecord(value) ? value : {};
  return { passing: readEntries(record.passing, "SUCCESS"), failing: readEntries(record.failing, "FAILURE") };
}

function readEntries(raw: unknown, type: StoredTestResult["type"]): StoredTestResult[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((entry): StoredTestResult[] => {
    if (!isRecord(entry) || typeof entry.test !== "string") return [];
    if (type !== "FAILURE") return [{ test: entry.test, type }];
    const failedRules = Array.isArray(entry.failedRules) ? entry.failedRules.flatMap(readFailedRule) : undefined;
    const omitted =
      typeof entry.failedRulesOmitted === "number" ? { failedRulesOmitted: entry.failedRulesOmitted } : {};
    return [{ test: entry.test, type, ...(failedRules && { failedRules }), ...omitted }];
  });
}

/** A stored failed rule with every field its readers rely on, whoever wrote it; anything but an object is dropped. */
function readFailedRule(raw: unknown): FailedRule[] {
  if (!isRecord(raw)) return [];
  const text = (value: unknown) => (typeof value === "string" ? value : "");
  // Cut again on read: a row stored before values were cut may hold them whole.
  const actual = Array.isArray(raw.actual) ? raw.actual.slice(0, MAX_ACTUAL).map(cutValue) : [];
  const expected = Array.isArray(raw.expected) ? raw.expected.filter((v) => typeof v === "string") : undefined;
  return [
    {
      path: text(raw.path),
      property: text(raw.property),
      operator: text(raw.operator) as FailedRule["operator"],
      negated: raw.negated === true,
      ...(expected && { expected }),
      actual,
      actualCount: typeof raw.actualCount === "number" ? raw.actualCount : actual.length,
      message: cutText(text(raw.message)),
    },
  ];
}

/** The aspect an evaluation would store on its own. */
export function testResultsOf(evaluation: EntityEvaluation): TestResultsAspect {
  return {
    passing: evaluation.passing.map((r) => ({ test: r.test, type: r.type })),
    failing: evaluation.failing.map((r) => ({ test: r.test, type: r.type, failedRules: r.failedRules })),
  };
}

/**
 * Merges a new evaluation into the stored aspect: every test that was evaluated (passed, failed, or no longer applies)
 * loses its earlier entry and gets its new one; results of other tests are kept, except those `keep` rejects (tests
 * that have since been deleted). Entries are sorted by test urn, so equal content is equal JSON.
 */
export function mergeTestResults(
  previous: TestResultsAspect,
  evaluated: ReadonlySet<string>,
  next: TestResultsAspect,
  keep: (testUrn: string) => boolean = () => true,
): TestResultsAspect {
  const byTest = new Map<string, StoredTestResult>();
  for (const entry of [...previous.passing, ...previous.failing]) {
    if (!evaluated.has(entry.test) && keep(entry.test)) byTest.set(entry.test, entry);
  }
  for (const entry of [...next.passing, ...next.failing]) byTest.set(entry.test, entry);
  const sorted = [...byTest.values()].sort((a, b) => (a.test < b.test ? -1 : a.test > b.test ? 1 : 0));
  return { passing: sorted.filter((e) => e.type === "SUCCESS"), failing: sorted.filter((e) => e.type === "FAILURE") };
}

/**
 * Whether two aspects hold the same entries for these tests (as stored: sorted by test urn): a push of their
 * evaluation changes the entity only when they differ.
 */
export function sameResultsOf(a: TestResultsAspect, b: TestResultsAspect, tests: ReadonlySet<string>): boolean {
  const of = (aspect: TestResultsAspect) =>
    [...aspect.passing, ...aspect.failing]
      .filter((e) => tests.has(e.test))
      .sort((x, y) => (x.test < y.test ? -1 : x.test > y.test ? 1 : 0));
  return sameJson(of(a), of(b));
}

/** Deep equality of two JSON values, key order ignored (PostgreSQL's jsonb reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (!isRecord(a) || !isRecord(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  const otherKeys = Object.keys(b).filter((k) => b[k] !== undefined);
  return keys.length === otherKeys.length && keys.every((k) => sameJson(a[k], b[k]));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A stored message as long as MAX_ACTUAL cut values and an operand list could make it; older rows' are cut there. */
const MAX_MESSAGE_CHARACTERS = 16_384;

function cutText(text: string): string {
  return text.length <= MAX_MESSAGE_CHARACTERS ? text : `${text.slice(0, MAX_MESSAGE_CHARACTERS)}…`;
}
