import type { EntityEvaluation } from "./entity-evaluation";
import { boundedTestResults } from "./result-limits";
import { mergeTestResults, sameResultsOf, testResultsOf, type TestResultsAspect } from "./test-results";

/** What a push of one entity's evaluation stores: the entity's testResults after it, and whether that is a write. */
export interface PushedTestResults {
  after: TestResultsAspect;
  /** `after` as JSON text, within RESULT_LIMITS.entityBytes */
  json: string;
  /** false: nothing to write (see pushedTestResults) */
  changed: boolean;
}

/**
 * An entity's stored testResults (`before`; undefined: none) with a push of `evaluation` merged in: the `evaluated`
 * tests' entries replaced by their new ones, and every entry whose test no longer `stands` (deleted, or edited away
 * from the entity's type, as the caller read the tests in the push's transaction) dropped, new ones included; bounded
 * in bytes. Unchanged when
 * the evaluated tests' entries are as stored, whatever else differs (an entry of a test deleted since is dropped only
 * with a write that happens anyway: an unrelated push never rewrites every entity a deleted test had results on), or
 * when no test has a result on an entity that has none stored (nothing applied to it). The one merge of every push
 * (ResultsPusher's, and runTest's in its evaluation thread).
 */
export function pushedTestResults(
  before: TestResultsAspect | undefined,
  evaluated: ReadonlySet<string>,
  evaluation: EntityEvaluation,
  stands: (testUrn: string) => boolean,
): PushedTestResults {
  const results = testResultsOf(evaluation);
  const merged = mergeTestResults(
    before ?? { passing: [], failing: [] },
    evaluated,
    { passing: results.passing.filter((r) => stands(r.test)), failing: results.failing.filter((r) => stands(r.test)) },
    stands,
  );
  // Within RESULT_LIMITS.entityBytes whatever other tests' entries it keeps (their values go first, see there).
  const { value: after, json } = boundedTestResults(merged);
  const changed = before ? !sameResultsOf(before, after, evaluated) : after.passing.length + after.failing.length > 0;
  return { after, json, changed };
}
