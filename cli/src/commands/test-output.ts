import type { ActionAnswer } from "../api-types";
import type { PreviewTestImpactQuery, TestRunDiffQuery } from "../generated/graphql";
import { counted, formatCount, formatTime, printLine, printTable } from "../output";

/** What `mdp tests` prints: an evaluation with its actions, a preview's impact, a run diff's rows. */

type Evaluation = ActionAnswer<"/test?action=evaluate">;
type FailedRule = Evaluation["failing"][number]["failedRules"][number];
/** An action a test's outcome takes (docs/api.md "Test actions"): what a push would do, or what it did. */
type TestAction = NonNullable<Evaluation["passing"][number]["actions"]>[number];
export type RunDiffEntities = TestRunDiffQuery["testRunDiff"]["newlyFailing"];

/** What `mdp tests preview` prints after its counts. */
export function printImpact(impact: PreviewTestImpactQuery["previewTestImpact"]): void {
  const of = impact.whole
    ? `all ${counted(impact.sampled, "entity", "entities")}`
    : `a sample of ${formatCount(impact.sampled)} of ${counted(impact.total, "entity", "entities")} (the first in urn order)`;
  printLine(`${impact.testUrn}, edited: evaluated on ${of} at ${formatTime(impact.evaluatedAt)}; nothing was saved`);
  printTable(
    ["change", "entities", "e.g."],
    [
      ["pass → fail", formatCount(impact.passToFail.count), impact.passToFail.examples.slice(0, 3).join(", ")],
      ["fail → pass", formatCount(impact.failToPass.count), impact.failToPass.examples.slice(0, 3).join(", ")],
      ["starts applying", formatCount(impact.startsApplying), ""],
      ["stops applying", formatCount(impact.stopsApplying), ""],
      ["still passing", formatCount(impact.unchangedPassing), ""],
      ["still failing", formatCount(impact.unchangedFailing), ""],
    ],
    { shorten: ["e.g."] },
  );
  if (impact.actions.length > 0) {
    printTable(
      ["on", "action", "params", "would run on", "newly"],
      impact.actions.map((a) => [
        a.on === "SUCCESS" ? "PASS" : "FAIL",
        a.type,
        paramsText(JSON.parse(a.params) as Record<string, unknown>),
        formatCount(a.entities),
        formatCount(a.newly),
      ]),
      { shorten: ["params"] },
    );
  }
}

export function listRows(
  name: string,
  list: RunDiffEntities,
  note: (entity: RunDiffEntities["entities"][number]) => string,
): string[][] {
  return list.entities.map((e, i) => [i === 0 ? name : "", e.urn, note(e)]);
}

export function printEvaluation(result: Evaluation, pushed: boolean): void {
  const when = result.evaluatedAt === undefined ? "" : ` at ${formatTime(result.evaluatedAt)}`;
  printLine(`${result.urn}, evaluated${when}${pushed ? " (results stored as its testResults)" : ""}`);
  const rows: string[][] = [
    ...result.passing.map((r) => ["PASS", r.test, "", ""]),
    ...result.failing.flatMap((r) => {
      const rules = r.failedRules ?? [];
      if (rules.length === 0) return [["FAIL", r.test, "", ""]];
      return rules.map((rule, i) => [i === 0 ? "FAIL" : "", i === 0 ? r.test : "", ruleText(rule), rule.message]);
    }),
    ...(result.notApplicable ?? []).map((test) => ["N/A", test, "", "the test does not select this entity"]),
  ];
  if (rows.length === 0) printLine("no test applies to this entity");
  else printTable(["result", "test", "failed rule", "why"], rows, { keep: ["test"], shorten: ["failed rule", "why"] });
  printLine(
    `${formatCount(result.passing.length)} passing, ${formatCount(result.failing.length)} failing` +
      (result.notApplicable?.length ? `, ${formatCount(result.notApplicable.length)} not applicable` : ""),
  );
  const actions = [...result.passing, ...result.failing].flatMap((r) =>
    (r.actions ?? []).map((a) => [r.test, a.type, paramsText(a.params), actionOutcome(a, pushed)]),
  );
  if (actions.length > 0)
    printTable(["test", "action", "params", pushed ? "push" : "if pushed"], actions, { shorten: ["params"] });
}

/** What a push did, or would do, with one action. */
function actionOutcome(action: TestAction, pushed: boolean): string {
  if (action.notApplied === "INACTIVE") return "left out: the test is INACTIVE, and only its owner's push applies it";
  // Either the test's owner lacks it, or, on a test someone else owns, the caller does.
  if (action.missingPrivilege) return `left out: ${action.missingPrivilege} is missing (the test's owner's or yours)`;
  if (!action.wouldChange) return "no change";
  return pushed ? "changed" : "would change";
}

/** `values: urn:li:tag:pii, urn:li:tag:gdpr; note: …` */
function paramsText(params: Record<string, unknown>): string {
  return Object.entries(params)
    .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : String(value)}`)
    .join("; ");
}

/** `rules.and[1]: not ownership.owners.type equals [TECHNICAL_OWNER]` */
function ruleText(rule: FailedRule): string {
  const expected = rule.expected?.length ? ` ${rule.expected.join(", ")}` : "";
  return `${rule.path}: ${rule.negated ? "not " : ""}${rule.property} ${rule.operator}${expected}`;
}
