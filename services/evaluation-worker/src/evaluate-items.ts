import {
  actionsFromJson,
  answerTooLarge,
  entityResultTooLarge,
  evaluationWithoutValues,
  RESULT_LIMITS,
  TestDefinitionError,
  utf8Bytes,
  type EntityEvaluation,
  type TestActions,
} from "@mdp/metadata-tests";
import type { EvaluationItem, EvaluationItemResult } from "@mdp/queues";
import { ActionAuthority, callerKey, callerOf, type PushCaller } from "./action-authority";
import type { EvaluationInput, StoredTest } from "./evaluation.store";
import type { EvaluateDeps } from "./evaluation-deps";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import { tallyOf, type EvaluationsJson, type Tally } from "./evaluation-thread";

/** What one item came to, before it is answered and recorded. */
export interface ItemOutcome {
  item: EvaluationItem;
  result: EvaluationItemResult;
  /**
   * the evaluations with the values found (cut) when there are any: what a push stores. An item only answered has them
   * as JSON text (resultsJson), parsed only if read (a task row's result).
   */
  readonly evaluations: EntityEvaluation[];
  /** what `evaluations` count: the task's progress and the metrics */
  tally: Tally;
  /** each urn's result as answered (its values only for a caller who may read them), serialized once */
  resultsJson?: Record<string, string>;
  /** how long its evaluation held a thread: the gateway charges it to the caller's evaluation-time budget */
  threadMs?: number;
}

/**
 * Evaluates a job's items in the evaluation pool's threads (see EvaluationPool), the items of one actor together as
 * one task: the gateway batches one actor's requests into a job, never two actors', so a slow item can hold only its
 * own actor's answers, while a job of quick items costs one round trip to a thread rather than one per request (at
 * 50 concurrent requests, a task per request took the evaluate benchmark from 0.54x to 0.34x of a bare round trip).
 * A refusal for an unknown entity or test, or for a cancelled task, is decided here. A request stopped at the time or
 * memory limit is refused naming the limit and the test (a 400: its tests cannot be evaluated on its entities within
 * this service's limits, and retrying cannot change that), and the others of its task run again; so is one needing a
 * test whose stored definition breaks a definition limit (a row stored before the limit existed).
 */
export function evaluateItems(
  deps: EvaluateDeps,
  items: readonly EvaluationItem[],
  input: EvaluationInput,
  at: number,
): Array<Promise<ItemOutcome[]>> {
  const groups: Array<Promise<ItemOutcome[]>> = [];
  // Per caller (actor and token: one actor's requests through two tokens may write different actions), so that each
  // group's answer lists the actions its own push would leave out.
  const byCaller = new Map<string, EvaluationItem[]>();
  for (const item of items) {
    const refused = refusalOf(item, input);
    const key = callerKey(callerOf(item));
    if (refused) groups.push(Promise.resolve([refused]));
    else byCaller.set(key, [...(byCaller.get(key) ?? []), item]);
  }
  const authority = new ActionAuthority(deps.ownerPrivileges);
  for (const group of byCaller.values()) groups.push(evaluateGroup(deps, authority, group, input, at));
  return groups;
}

async function evaluateGroup(
  deps: EvaluateDeps,
  authority: ActionAuthority,
  group: EvaluationItem[],
  input: EvaluationInput,
  at: number,
): Promise<ItemOutcome[]> {
  const actor = group[0]!.actorUrn;
  const tests = await withActionsWithheld(
    input.tests.filter((t) => group.some((item) => (item.testUrns ? item.testUrns.includes(t.urn) : t.active))),
    callerOf(group[0]!),
    authority,
  );
  // Its actor's share of the threads (see EvaluationPool), and the thread time to charge to it.
  // Values are built only for a caller who may read them (GET_ENTITY, decided by its gateway) or to be stored. An
  // item only answered comes back as JSON text: its results are not needed as objects.
  const { outcomes, threadMs } = await deps.pool.evaluateTimed(
    { actor, at, tests, entities: input.entities },
    group.map((item) => {
      const one = { urns: item.urns, testUrns: item.testUrns, withValues: item.push || item.showValues === true };
      return item.push ? one : { ...one, json: true as const };
    }),
  );
  // The task's thread time, shared by its requests: all of one actor, whose budget the gateway charges.
  const share = threadMs / group.length;
  return group.map((item, i) => {
    const outcome = outcomes[i]!;
    if (outcome instanceof EvaluationLimitError || outcome instanceof StoredDefinitionError) {
      return { ...refusal(item, "BAD_USER_INPUT", outcome.message), threadMs: share };
    }
    if ("json" in outcome) {
      const checked = checkResults(item.urns, outcome.json, (i) => JSON.parse(outcome.json[i]!) as EntityEvaluation);
      if ("tooLarge" in checked) return { ...refusal(item, "BAD_USER_INPUT", checked.tooLarge), threadMs: share };
      return answered(item, outcome, checked.resultsJson, share);
    }
    // Evaluated with values only to push them: the answer hides them again (without a push there are none to hide).
    const shown = item.showValues === true || !item.push ? outcome : outcome.map(evaluationWithoutValues);
    const serialized = checkResults(
      item.urns,
      shown.map((e) => JSON.stringify(e)),
      (i) => shown[i]!,
    );
    if ("tooLarge" in serialized) return { ...refusal(item, "BAD_USER_INPUT", serialized.tooLarge), threadMs: share };
    return {
      item,
      result: { results: Object.fromEntries(shown.map((e) => [e.urn, e])) },
      resultsJson: serialized.resultsJson,
      evaluations: outcome,
      tally: tallyOf(outcome),
      threadMs: share,
    };
  });
}

/** The outcome of an item answered from its thread's JSON text: its objects are parsed only if they are read. */
function answered(
  item: EvaluationItem,
  outcome: EvaluationsJson,
  resultsJson: Record<string, string>,
  threadMs: number,
): ItemOutcome {
  let parsed: EntityEvaluation[] | undefined;
  const evaluations = () => (parsed ??= outcome.json.map((json) => JSON.parse(json) as EntityEvaluation));
  return {
    item,
    result: {
      get results() {
        return Object.fromEntries(evaluations().map((e) => [e.urn, e]));
      },
    },
    resultsJson,
    get evaluations() {
      return evaluations();
    },
    tally: outcome.tally,
    threadMs,
  };
}

/**
 * Each urn's result as JSON text (`jsons`, in the order of `urns`, serialized once: in the thread, or from the objects
 * of an item pushed), or why the request is refused: one entity's result over RESULT_LIMITS.entityBytes, or all of
 * them together over RESULT_LIMITS.answerBytes (a 400 naming the limit; nothing is pushed). The checks cost the texts'
 * lengths (bytes are counted only when the length allows more); `evaluation` gives the i-th result's object, for a
 * refusal's words.
 */
function checkResults(
  urns: readonly string[],
  jsons: readonly string[],
  evaluation: (i: number) => EntityEvaluation,
): { resultsJson: Record<string, string> } | { tooLarge: string } {
  const resultsJson: Record<string, string> = {};
  let characters = 0;
  for (let i = 0; i < jsons.length; i++) {
    const json = jsons[i]!;
    const bytes = utf8Bytes(json, RESULT_LIMITS.entityBytes);
    if (bytes > RESULT_LIMITS.entityBytes) return { tooLarge: entityResultTooLarge(evaluation(i), bytes) };
    characters += json.length;
    resultsJson[urns[i]!] = json;
  }
  if (characters * 3 > RESULT_LIMITS.answerBytes) {
    let bytes = 0;
    for (const json of Object.values(resultsJson)) bytes += Buffer.byteLength(json, "utf8");
    if (bytes > RESULT_LIMITS.answerBytes) return { tooLarge: answerTooLarge(jsons.length, bytes) };
  }
  return { resultsJson };
}

function refusal(
  item: EvaluationItem,
  code: "NOT_FOUND" | "CONFLICT" | "BAD_USER_INPUT",
  message: string,
): ItemOutcome {
  return { item, result: { refused: { code, message } }, evaluations: [], tally: NOTHING };
}

const NOTHING: Tally = Object.freeze({ entities: 0, passing: 0, failing: 0, notApplicable: 0 });

/** The refusal of an item that is not evaluated at all (cancelled, or naming what does not exist), if any. */
function refusalOf(item: EvaluationItem, input: EvaluationInput): ItemOutcome | undefined {
  if (input.cancelled.has(item.taskId)) return cancelledOutcome(item);
  const known = new Set(input.tests.map((t) => t.urn));
  const missing = [
    ...describeMissing(
      "Entity",
      "Entities",
      item.urns.filter((urn) => !input.entities.has(urn)),
    ),
    ...describeMissing(
      "Test",
      "Tests",
      (item.testUrns ?? []).filter((urn) => !known.has(urn)),
    ),
  ];
  return missing.length > 0 ? refusal(item, "NOT_FOUND", missing.join("; ")) : undefined;
}

/** A request whose task was cancelled (only a caller that got a 504 knows the task id): refused, nothing pushed. */
export function cancelledOutcome(item: EvaluationItem): ItemOutcome {
  return refusal(item, "CONFLICT", `Task ${item.taskId} was cancelled`);
}

/**
 * The tests as this caller's evaluation gives them to its thread: each test with actions carries what a push by the
 * caller would leave out of them (StoredTest.actionsLack, actionsNotApplied; ActionAuthority), so that the answer
 * lists those actions as not applied. Tests without actions read nothing: the evaluations most jobs make cost no more
 * than before. A push decides again, in its own transaction.
 */
async function withActionsWithheld(
  tests: StoredTest[],
  caller: PushCaller,
  authority: ActionAuthority,
): Promise<StoredTest[]> {
  return Promise.all(
    tests.map(async (test) => {
      const raw = (test.definition as { actions?: unknown } | null)?.actions;
      if (raw === undefined) return test;
      let actions: TestActions;
      try {
        actions = actionsFromJson(raw);
      } catch (error) {
        if (error instanceof TestDefinitionError) return test; // the evaluation refuses the stored definition itself
        throw error;
      }
      const owner = { urn: test.ownerUrn, tokenId: test.ownerTokenId, suspended: test.suspended };
      const withheld = await authority.withheld({ owner, active: test.active, actions }, caller);
      if (!withheld) return test;
      return {
        ...test,
        ...(withheld.missing && { actionsLack: [...withheld.missing] }),
        ...(withheld.notApplied && { actionsNotApplied: withheld.notApplied }),
      };
    }),
  );
}

function describeMissing(one: string, many: string, urns: readonly string[]): string[] {
  if (urns.length === 0) return [];
  return [urns.length === 1 ? `${one} ${urns[0]} does not exist` : `${many} ${urns.join(", ")} do not exist`];
}
