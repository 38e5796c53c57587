import { readFileSync, statSync } from "node:fs";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import type { ActionAnswer } from "../api-types";
import { EXIT, usageError } from "../exit-codes";
import type {
  CreateTestInput,
  CreateTestMutation,
  CreateTestMutationVariables,
  ListTestsQuery,
  ListTestsQueryVariables,
  TestResultHistoryQuery,
  TestResultHistoryQueryVariables,
  TestRunDiffQuery,
  PreviewTestImpactQuery,
  PreviewTestImpactQueryVariables,
  TestRunDiffQueryVariables,
  TestState,
} from "../generated/graphql";
import {
  CREATE_TEST,
  LIST_TESTS,
  PREVIEW_TEST_IMPACT,
  TEST_RESULT_HISTORY,
  TEST_RUN_DIFF,
} from "../graphql-operations";
import { apiClient, globalsOf, oneOf, wholeNumber } from "../options";
import { formatTime, printJson, printLine, printTable } from "../output";
import { pageLine } from "./tokens";

/** Request bodies over 1 MiB are refused by the gateway (docs/limits.md): no point reading a bigger file. */
const MAX_FILE_BYTES = 1024 * 1024;
const STATES = ["ACTIVE", "INACTIVE"] as const satisfies readonly TestState[];

type Evaluation = ActionAnswer<"/test?action=evaluate">;
type FailedRule = Evaluation["failing"][number]["failedRules"][number];
/** An action a test's outcome takes (docs/api.md "Test actions"): what a push would do, or what it did. */
type TestAction = NonNullable<Evaluation["passing"][number]["actions"]>[number];
type Transition = TestResultHistoryQuery["testResultHistory"]["transitions"][number];
type RunDiffEntities = TestRunDiffQuery["testRunDiff"]["newlyFailing"];

/** The options that override a test file's fields. */
interface TestOptions {
  id?: string;
  name?: string;
  category?: string;
  description?: string;
  state?: TestState;
  schedule?: string;
}

export function registerTests(program: Command): void {
  const tests = program
    .command("tests")
    .description(
      "metadata tests: create from a file, list, evaluate an entity, a result's history, a run's changes, preview an edit",
    );

  tests
    .command("create")
    .description("create a metadata test from a YAML or JSON file")
    .argument("<file>", "the test (YAML or JSON): name, category, description?, id?, state?, definition")
    .option("--id <id>", "the test urn becomes urn:li:test:<id> (default: the file's id, else generated)")
    .option("--name <name>", "overrides the file's name")
    .option("--category <category>", "overrides the file's category")
    .option("--description <text>", "overrides the file's description")
    .option("--state <state>", "ACTIVE (default) or INACTIVE", oneOf(STATES))
    .option("--schedule <cron>", "run the test by itself on this cron (UTC), e.g. '0 3 * * *' (overrides the file's)")
    .addHelpText(
      "after",
      `
The file holds either a whole test:

  name: Datasets have a description
  category: Documentation
  definition:
    on: {types: [dataset]}
    rules:
      - {property: datasetProperties.description, operator: exists}

or a bare definition (on, rules, actions), with --name and --category given as options. A whole test may carry
schedule: {cron: '0 3 * * *'}: it then runs by itself (runTest with push) and its results' history grows.
By default a test is evaluated whenever an entity it selects changes, and run over everything it selects once
created; a whole test with evaluateOnChange: false runs only when asked or scheduled.`,
    )
    .action(async (file: string, options: TestOptions, command: Command) => {
      const input = readTestFile(file, options);
      const { createTest: urn } = await apiClient().graphql<CreateTestMutation, CreateTestMutationVariables>(
        CREATE_TEST,
        { input },
      );
      if (globalsOf(command).json) printJson({ urn });
      else printLine(`created test ${urn}`);
    });

  tests
    .command("list")
    .description("metadata tests")
    .option("--query <text>", "only tests whose name, category or description contains this (ignoring case)")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many", wholeNumber(1, 1000), 20)
    .action(async (options: { query?: string; start: number; count: number }, command: Command) => {
      const { listTests: page } = await apiClient().graphql<ListTestsQuery, ListTestsQueryVariables>(LIST_TESTS, {
        input: { start: options.start, count: options.count, query: options.query },
      });
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["test", "name", "category", "state", "on", "schedule (UTC)", "runs as", "updated"],
        page.tests.map((t) => [
          t.urn,
          t.name,
          t.category,
          t.state,
          t.onTypes.join(", "),
          t.schedule
            ? t.schedule.suspendedAt !== null
              ? `${t.schedule.cron}, SUSPENDED`
              : `${t.schedule.cron}${t.schedule.nextRunAt ? `, next ${formatTime(t.schedule.nextRunAt)}` : ""}`
            : "",
          t.schedule ? t.ownerUrn : "",
          formatTime(t.updatedAt),
        ]),
      );
      printLine(pageLine(page.start, page.tests.length, page.total, "tests"));
    });

  tests
    .command("evaluate")
    .description(
      "evaluate tests against an entity: why each failing test failed, and the actions a push takes (--push) or would",
    )
    .argument("<entityUrn>", "e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)'")
    .option("--test <urn...>", "only these tests (default: every ACTIVE test for the entity's type)")
    .option("--push", "store the results as the entity's testResults (needs MANAGE_TESTS)")
    .option("--exit-code", "exit 6 when a test fails (for scripts and CI)")
    .action(
      async (entityUrn: string, options: { test?: string[]; push?: boolean; exitCode?: boolean }, command: Command) => {
        const result = await apiClient().action("/test?action=evaluate", {
          urn: entityUrn,
          push: Boolean(options.push),
          ...(options.test ? { testUrns: options.test } : {}),
        });
        if (globalsOf(command).json) printJson(result);
        else printEvaluation(result, Boolean(options.push));
        if (options.exitCode && result.failing.length > 0) process.exitCode = EXIT.TEST_FAILED;
      },
    );

  tests
    .command("history")
    .description("since when an entity passes or fails a test: each change of its pushed result, newest first")
    .argument("<entityUrn>", "e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)'")
    .argument("<testUrn>", "e.g. urn:li:test:owned")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "show at most this many", wholeNumber(1, 100), 20)
    .action(async (entityUrn: string, testUrn: string, options: { start: number; count: number }, command: Command) => {
      const { testResultHistory: page } = await apiClient().graphql<
        TestResultHistoryQuery,
        TestResultHistoryQueryVariables
      >(TEST_RESULT_HISTORY, { urn: entityUrn, testUrn, start: options.start, count: options.count });
      if (globalsOf(command).json) return printJson(page);
      const word = (type: Transition["type"] | null) => (type === null ? "" : type === "SUCCESS" ? "PASS" : "FAIL");
      const newest = page.start === 0 ? page.transitions[0] : undefined;
      if (newest) printLine(`${word(newest.type) === "PASS" ? "passing" : "failing"} since ${formatTime(newest.at)}`);
      printTable(
        ["since", "result", "before"],
        page.transitions.map((t) => [formatTime(t.at), word(t.type), word(t.previousType) || "(first result)"]),
      );
      printLine(pageLine(page.start, page.transitions.length, page.total, "changes"));
    });

  tests
    .command("preview")
    .description(
      "before saving an edited test: how many entities would flip and which actions would fire (saves nothing)",
    )
    .argument("<testUrn>", "the existing test, e.g. urn:li:test:owned")
    .argument("<file>", "the edited test or bare definition (YAML or JSON), as tests create reads it")
    .option(
      "--sample <n>",
      "evaluate at most this many entities (the first in urn order)",
      wholeNumber(1, 5_000),
      1_000,
    )
    .action(async (testUrn: string, file: string, options: { sample: number }, command: Command) => {
      // Name and category do not matter here: only the definition is previewed.
      const input = readTestFile(file, { name: "preview", category: "preview" });
      const { previewTestImpact: impact } = await apiClient().graphql<
        PreviewTestImpactQuery,
        PreviewTestImpactQueryVariables
      >(PREVIEW_TEST_IMPACT, { urn: testUrn, json: input.definition.json, sampleSize: options.sample });
      if (globalsOf(command).json) return printJson(impact);
      printImpact(impact);
    });

  tests
    .command("diff")
    .description("what a run of a test changed since the test's previous run: newly failing, newly passing, flapping")
    .argument("<testUrn>", "e.g. urn:li:test:owned")
    .argument("[runId]", "the run's task id (runTest's answer, listTasks); default: the test's latest run")
    .action(async (testUrn: string, runId: string | undefined, _options: unknown, command: Command) => {
      const { testRunDiff: diff } = await apiClient().graphql<TestRunDiffQuery, TestRunDiffQueryVariables>(
        TEST_RUN_DIFF,
        { testUrn, ...(runId !== undefined && { runId }) },
      );
      if (globalsOf(command).json) return printJson(diff);
      const since = diff.previousRunId ? `run ${diff.previousRunId}` : "the results before it (its first run)";
      printLine(`run ${diff.runId} of ${diff.testUrn}: ${diff.evaluated} entities evaluated, compared with ${since}`);
      const word = (type: string | null | undefined) => (type ? (type === "SUCCESS" ? "PASS" : "FAIL") : "");
      const rows = [
        ...listRows("newly failing", diff.newlyFailing, (e) => `was ${word(e.previousType) || "without a result"}`),
        ...listRows("newly passing", diff.newlyPassing, (e) => `was ${word(e.previousType) || "without a result"}`),
        ...listRows("flapping", diff.flapping, (e) => `${word(e.type)} now, ${e.changes} changes`),
      ];
      if (rows.length > 0) printTable(["change", "entity", ""], rows);
      for (const [name, list] of [
        ["newly failing", diff.newlyFailing],
        ["newly passing", diff.newlyPassing],
        ["flapping", diff.flapping],
      ] as const) {
        const cut = list.truncated ? ` (${list.entities.length} shown)` : "";
        printLine(`${name}: ${list.total}${cut}`);
      }
      printLine(
        `flapping: more than ${diff.flapChanges} changes in the last ${diff.flapRuns} runs (since ${formatTime(diff.flapSince)})`,
      );
    });
}

/** What `mdp tests preview` prints after its counts. */
function printImpact(impact: PreviewTestImpactQuery["previewTestImpact"]): void {
  const of = impact.whole
    ? `all ${impact.sampled} entities`
    : `a sample of ${impact.sampled} of ${impact.total} entities (the first in urn order)`;
  printLine(`${impact.testUrn}, edited: evaluated on ${of} at ${formatTime(impact.evaluatedAt)}; nothing was saved`);
  printTable(
    ["change", "entities", "e.g."],
    [
      ["pass → fail", String(impact.passToFail.count), impact.passToFail.examples.slice(0, 3).join(", ")],
      ["fail → pass", String(impact.failToPass.count), impact.failToPass.examples.slice(0, 3).join(", ")],
      ["starts applying", String(impact.startsApplying), ""],
      ["stops applying", String(impact.stopsApplying), ""],
      ["still passing", String(impact.unchangedPassing), ""],
      ["still failing", String(impact.unchangedFailing), ""],
    ],
  );
  if (impact.actions.length > 0) {
    printTable(
      ["on", "action", "params", "would run on", "newly"],
      impact.actions.map((a) => [
        a.on === "SUCCESS" ? "PASS" : "FAIL",
        a.type,
        paramsText(JSON.parse(a.params) as Record<string, unknown>),
        String(a.entities),
        String(a.newly),
      ]),
    );
  }
}

function listRows(
  name: string,
  list: RunDiffEntities,
  note: (entity: RunDiffEntities["entities"][number]) => string,
): string[][] {
  return list.entities.map((e, i) => [i === 0 ? name : "", e.urn, note(e)]);
}

function readTestFile(file: string, options: TestOptions): CreateTestInput {
  let text: string;
  try {
    if (statSync(file).size > MAX_FILE_BYTES) throw usageError(`${file} is larger than the 1 MiB a request may carry`);
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === undefined) throw error;
    throw usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw usageError(`${file} is not YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw usageError(`${file} must hold a test (name, category, definition) or a definition (on, rules)`);
  }
  const fields = parsed as Record<string, unknown>;
  const fromFile = (key: string) => (typeof fields[key] === "string" ? (fields[key] as string) : undefined);
  // A whole test has a definition (an object, or its text); a bare definition goes to the server as written.
  const definition =
    "definition" in fields
      ? typeof fields.definition === "string"
        ? fields.definition
        : JSON.stringify(fields.definition)
      : text;
  const name = options.name ?? fromFile("name");
  const category = options.category ?? fromFile("category");
  if (!name) throw usageError(`the test needs a name: put it in ${file} or give --name`);
  if (!category) throw usageError(`the test needs a category: put it in ${file} or give --category`);
  const input: CreateTestInput = {
    id: options.id ?? fromFile("id"),
    name,
    category,
    description: options.description ?? fromFile("description"),
    // a file's state goes as written: the server refuses anything but ACTIVE or INACTIVE
    state: options.state ?? (fromFile("state")?.toUpperCase() as TestState | undefined),
    definition: { json: definition },
  };
  const fileCron = (fields.schedule as { cron?: unknown } | undefined)?.cron;
  const cron = options.schedule ?? (typeof fileCron === "string" ? fileCron : undefined);
  if (cron !== undefined) input.schedule = { cron };
  // as written: the server refuses anything but a boolean, naming the field
  if (fields.evaluateOnChange !== undefined) input.evaluateOnChange = fields.evaluateOnChange as boolean;
  return input;
}

function printEvaluation(result: Evaluation, pushed: boolean): void {
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
  else printTable(["result", "test", "failed rule", "why"], rows);
  printLine(
    `${result.passing.length} passing, ${result.failing.length} failing` +
      (result.notApplicable?.length ? `, ${result.notApplicable.length} not applicable` : ""),
  );
  const actions = [...result.passing, ...result.failing].flatMap((r) =>
    (r.actions ?? []).map((a) => [r.test, a.type, paramsText(a.params), actionOutcome(a, pushed)]),
  );
  if (actions.length > 0) printTable(["test", "action", "params", pushed ? "push" : "if pushed"], actions);
}

/** What a push did, or would do, with one action. */
function actionOutcome(action: TestAction, pushed: boolean): string {
  if (action.missingPrivilege) return `left out: the test's owner lacks ${action.missingPrivilege}`;
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
