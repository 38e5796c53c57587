import type { TestActions } from "./definition.types";
import type { EntityEvaluation, ResultAction } from "./entity-evaluation";
import type { EntitySnapshot } from "./entity.types";
import { actionRunsOf, planActions, type ActionRun } from "./action-planner";
import { privilegeOfAction, withoutRefused, type LackingOf, type WithheldOf } from "./action-privileges";

/**
 * Lists on each result of `evaluation` the actions its test would take if the result were pushed, planned against the
 * aspects the evaluation read (`entity`): `{type, params, wouldChange}` in its definition's order. An action whose
 * privilege the push may not use (`lacking`) is listed with `missingPrivilege` and `wouldChange: false`, and left
 * out of the plan, as a push leaves it out; every action of a test `withheld` says is not applied is listed with
 * `notApplied` and `wouldChange: false`. Results of tests without actions for their outcome get no `actions` field.
 * A push plans again, under its locks, against the aspects and the grants as they are then.
 */
export function annotateActions(
  evaluation: EntityEvaluation,
  entity: EntitySnapshot,
  actionsOf: (test: string) => TestActions | undefined,
  lacking: LackingOf = () => undefined,
  withheld: WithheldOf = () => undefined,
): EntityEvaluation {
  const runs = actionRunsOf(evaluation, actionsOf);
  if (runs.length === 0) return evaluation;
  const applied = withoutRefused(
    runs.filter((run) => withheld(run.test) === undefined),
    lacking,
  );
  const { actions } = planActions(entity.aspects, applied, evaluation.evaluatedAt);
  const listed = (test: string, outcome: ActionRun["outcome"]): ResultAction[] => {
    const planned = actions.filter((a) => a.test === test && a.outcome === outcome);
    const lacks = lacking(test);
    const notApplied = withheld(test);
    let next = 0;
    return (runs.find((r) => r.test === test && r.outcome === outcome)?.actions ?? []).map(({ type, params }) => {
      if (notApplied) return { type, params, wouldChange: false, notApplied };
      const privilege = privilegeOfAction(type);
      if (lacks?.has(privilege)) return { type, params, wouldChange: false, missingPrivilege: privilege };
      return { type, params, wouldChange: planned[next++]!.wouldChange };
    });
  };
  const withActions = <R extends { test: string }>(result: R, outcome: ActionRun["outcome"]): R => {
    const list = listed(result.test, outcome);
    return list.length > 0 ? { ...result, actions: list } : result;
  };
  return {
    ...evaluation,
    passing: evaluation.passing.map((r) => withActions(r, "passing")),
    failing: evaluation.failing.map((r) => withActions(r, "failing")),
  };
}
