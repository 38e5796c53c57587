import type { Command } from "commander";
import { CliError, EXIT, usageError } from "../exit-codes";
import type {
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
  TestQuery,
  TestQueryVariables,
  TestState,
  UpdateTestInput,
  UpdateTestMutation,
  UpdateTestMutationVariables,
} from "../generated/graphql";
import {
  CREATE_TEST,
  LIST_TESTS,
  PREVIEW_TEST_IMPACT,
  TEST_RESULT_HISTORY,
  TEST,
  TEST_RUN_DIFF,
  UPDATE_TEST,
} from "../graphql-operations/tests";
import { apiClient, globalsOf, oneOf, wholeNumber } from "../options";
import { counted, formatCount, formatTime, printJson, printLine, printTable } from "../output";
import { readTestDocument, readTestFile, runningFields, type TestOptions } from "./test-file";
import { listRows, printEvaluation, printImpact } from "./test-output";
import { pageLine } from "./tokens";

const STATES = ["ACTIVE", "INACTIVE"] as const satisfies readonly TestState[];

type Transition = TestResultHistoryQuery["testResultHistory"]["transitions"][number];

export function registerTests(program: Command): void {
  const tests = program
    .command("tests")
    .description(
      "metadata tests: create from a file, list, evaluate an entity, a result's history, a run's changes, preview and save an edit",
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
        { shorten: ["name", "category", "on", "schedule (UTC)"] },
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
      // Only the definition is previewed, and tests update saves this same definition.
      const { definition } = readTestDocument(file);
      const { previewTestImpact: impact } = await apiClient().graphql<
        PreviewTestImpactQuery,
        PreviewTestImpactQueryVariables
      >(PREVIEW_TEST_IMPACT, { urn: testUrn, json: definition, sampleSize: options.sample });
      if (globalsOf(command).json) return printJson(impact);
      printImpact(impact);
    });

  tests
    .command("update")
    .description("save an edited test: the file tests preview showed, as it previewed it")
    .argument("<testUrn>", "the existing test, e.g. urn:li:test:owned")
    .argument("<file>", "the edited test or bare definition (YAML or JSON), as tests create and tests preview read it")
    .option("--name <name>", "overrides the file's name (default: the file's, else the test's)")
    .option("--category <category>", "overrides the file's category (default: the file's, else the test's)")
    .option("--description <text>", "overrides the file's description (default: the file's, else the test's)")
    .option("--state <state>", "ACTIVE or INACTIVE (default: the file's, else unchanged)", oneOf(STATES))
    .option("--schedule <cron>", "run the test by itself on this cron (UTC) (default: the file's, else unchanged)")
    .option("--no-schedule", "remove the test's schedule")
    .addHelpText(
      "after",
      `
Needs MANAGE_TESTS. A bare definition (on, rules, actions) keeps the test's name, category and description; a
whole test's fields replace them. A changed definition re-evaluates every entity the test selects and makes you its
owner. Check the edit first: mdp tests preview <testUrn> <file>`,
    )
    .action(
      async (
        testUrn: string,
        file: string,
        options: Omit<TestOptions, "schedule"> & { schedule?: string | false },
        command: Command,
      ) => {
        const test = readTestDocument(file);
        const id = test.text("id");
        if (id !== undefined && `urn:li:test:${id}` !== testUrn) {
          throw usageError(`${file} is test urn:li:test:${id}, not ${testUrn}`);
        }
        const client = apiClient();
        const { test: current } = await client.graphql<TestQuery, TestQueryVariables>(TEST, { urn: testUrn });
        if (!current) throw new CliError(`Test ${testUrn} does not exist`, EXIT.NOT_FOUND);
        const { schedule, ...rest } = options;
        const input: UpdateTestInput = {
          name: options.name ?? test.text("name") ?? current.name,
          category: options.category ?? test.text("category") ?? current.category,
          description: options.description ?? test.text("description") ?? current.description,
          definition: { json: test.definition },
          ...runningFields(test, { ...rest, schedule: schedule === false ? undefined : schedule }),
        };
        if (schedule === false || (schedule === undefined && test.fields.schedule === null)) input.schedule = null;
        const { updateTest: urn } = await client.graphql<UpdateTestMutation, UpdateTestMutationVariables>(UPDATE_TEST, {
          urn: testUrn,
          input,
        });
        if (globalsOf(command).json) printJson({ urn, updated: true });
        else printLine(`updated test ${urn}`);
      },
    );

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
      printLine(
        `run ${diff.runId} of ${diff.testUrn}: ${counted(diff.evaluated, "entity", "entities")} evaluated, compared with ${since}`,
      );
      const word = (type: string | null | undefined) => (type ? (type === "SUCCESS" ? "PASS" : "FAIL") : "");
      const rows = [
        ...listRows("newly failing", diff.newlyFailing, (e) => `was ${word(e.previousType) || "without a result"}`),
        ...listRows("newly passing", diff.newlyPassing, (e) => `was ${word(e.previousType) || "without a result"}`),
        ...listRows("flapping", diff.flapping, (e) => `${word(e.type)} now, ${e.changes} changes`),
      ];
      if (rows.length > 0) printTable(["change", "entity", ""], rows, { keep: ["entity"], shorten: [""] });
      for (const [name, list] of [
        ["newly failing", diff.newlyFailing],
        ["newly passing", diff.newlyPassing],
        ["flapping", diff.flapping],
      ] as const) {
        const cut = list.truncated ? ` (${formatCount(list.entities.length)} shown)` : "";
        // what counts as flapping, on flapping's own line: one line per list
        const flapping =
          name === "flapping"
            ? ` (more than ${counted(diff.flapChanges, "change")} in the last ${counted(diff.flapRuns, "run")}, since ${formatTime(diff.flapSince)})`
            : "";
        printLine(`${name}: ${formatCount(list.total)}${cut}${flapping}`);
      }
    });
}
