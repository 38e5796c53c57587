import { isPropertyPredicate, type Predicate } from "./definition.types";
import type { EntitySnapshot } from "./entity.types";
import { resolveProperty } from "./entity-property.resolver";
import { failedRule, type FailedRule } from "./failed-rule";
import { satisfies } from "./operator.evaluator";

/**
 * Whether a predicate came out as wanted and, when it did not, the leaf predicates responsible: described only when
 * asked (`explain`), since an `or` that passes has all its other branches fail, and describing each (its message, its
 * values cut) was most of the time of a large definition that passes.
 */
export interface Verdict {
  ok: boolean;
  explain: () => FailedRule[];
}

const NOTHING_TO_EXPLAIN = (): FailedRule[] => [];

/**
 * Checks that `predicate` (found at `path`) evaluates to `want` on the entity. Asking for a wanted outcome, rather
 * than just a boolean, is what lets a `not` explain itself: inside it, the leaves that held are the ones to blame.
 * Every child is evaluated (no short-circuit) so that all failures are reported, not only the first.
 */
export function checkPredicate(
  predicate: Predicate,
  path: string,
  want: boolean,
  entity: EntitySnapshot,
  /** whether failed rules carry the values found (failedRule) */
  withValues = true,
): Verdict {
  if (isPropertyPredicate(predicate)) {
    const resolved = resolveProperty(entity, predicate.property);
    const ok = satisfies(predicate, resolved) === want;
    return {
      ok,
      explain: ok ? NOTHING_TO_EXPLAIN : () => [failedRule(predicate, path, resolved.values, !want, withValues)],
    };
  }
  if ("not" in predicate) return checkPredicate(predicate.not, `${path}.not`, !want, entity, withValues);
  const [combinator, children] =
    "and" in predicate ? (["and", predicate.and] as const) : (["or", predicate.or] as const);
  const verdicts = children.map((child, index) =>
    checkPredicate(child, `${path}.${combinator}[${index}]`, want, entity, withValues),
  );
  // and=true and or=false need every child as wanted; or=true and and=false need only one.
  const needsAll = (combinator === "and") === want;
  const ok = needsAll ? verdicts.every((verdict) => verdict.ok) : verdicts.some((verdict) => verdict.ok);
  return { ok, explain: ok ? NOTHING_TO_EXPLAIN : () => verdicts.flatMap((verdict) => verdict.explain()) };
}
