import type { Command } from "commander";
import type { ActionEnvelope } from "../api-types";
import { INSTANT_HELP, parseInstant } from "../instants";
import { apiClient, globalsOf, oneOf, resolveMe, wholeNumber } from "../options";
import { counted, formatCount, formatTime, printJson, printLine, printRecord, printTable, reportText } from "../output";
import { describeProgress, describeResult, TASK_STATES, TASK_TYPES, type TaskStatus } from "../task-status";
import { confirmDestructive, YES_HELP } from "../terminal";
import { parsePace, PACE_HELP, requestRethrottle, watchTask } from "../watch";
import { pageLine } from "./tokens";

const interval = () => wholeNumber(100, 60_000);

export function registerOperations(program: Command): void {
  program
    .command("index-sizes")
    .description("the time-series aspects holding data: rows, size, oldest and newest row (what truncate takes)")
    .action(async (_options: unknown, command: Command) => {
      const { indexSizes } = await apiClient().action("/operations?action=getIndexSizes");
      if (globalsOf(command).json) return printJson(indexSizes);
      printTable(
        ["entity type", "aspect", "rows", "size (MB)", "oldest", "newest"],
        indexSizes.map((s) => [
          s.entityName,
          s.aspectName,
          formatCount(s.rowCount),
          s.sizeInMb,
          formatTime(s.oldestTimestampMillis),
          formatTime(s.newestTimestampMillis),
        ]),
      );
      if (indexSizes.length === 0) printLine("no time-series aspect holds data");
    });

  program
    .command("truncate")
    .description("delete time-series rows older than an instant: a dry-run report unless --execute")
    .argument("<entityType>", "e.g. dataset (see mdp index-sizes)")
    .argument("<aspect>", "e.g. datasetProfile (see mdp index-sizes)")
    .requiredOption("--older-than <when>", `rows before this go: ${INSTANT_HELP}`)
    .option("--execute", "really delete: start the task and watch it to its end (default: a dry run)")
    .option("--no-watch", "with --execute: print the task id and return at once")
    .option("--batch-size <rows>", "rows per delete transaction (1-1000000, server default 10000)", wholeNumber(1, 1e6))
    .option("--timeout-seconds <s>", "stop the task (failed) after this long", wholeNumber(1, 1e9))
    .option("--rows-per-second <n>", `pace the batch deletes (${PACE_HELP}); mdp tasks rethrottle changes it`, (v) =>
      parsePace("--rows-per-second", v),
    )
    .option("--interval <ms>", "how often to poll the task while watching", interval(), 500)
    .addHelpText(
      "after",
      `
With --execute on a terminal a live progress bar shows the rows deleted, the rate and the ETA; Ctrl-C asks
whether to cancel the task, change its pace, or only stop watching. Without a terminal it prints a line per change (with --json:
on stderr, and the final task status as JSON on stdout). Exit 0 when the task completed, 5 when it failed or
was cancelled.

Examples:
  mdp truncate dataset datasetProfile --older-than 90d
  mdp truncate dataset datasetProfile --older-than 2024-01-01 --execute`,
    )
    .action(
      async (
        entityType: string,
        aspect: string,
        options: {
          olderThan: string;
          execute?: boolean;
          watch: boolean;
          batchSize?: number;
          timeoutSeconds?: number;
          rowsPerSecond?: number | null;
          interval: number;
        },
        command: Command,
      ) => {
        const { json } = globalsOf(command);
        const endTimeMillis = parseInstant("--older-than", options.olderThan);
        const client = apiClient();
        const body = {
          entityType,
          aspect,
          endTimeMillis,
          dryRun: !options.execute,
          ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
          ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
          ...(options.rowsPerSecond == null ? {} : { rowsPerSecond: options.rowsPerSecond }),
        };
        const { value, plan } = await client.actionEnvelope("/operations?action=truncateTimeseriesAspect", body);
        const cutoff = `${entityType}/${aspect} rows older than ${formatTime(endTimeMillis)} (endTimeMillis ${endTimeMillis})`;
        if (!options.execute) {
          if (json) return printJson({ entityType, aspect, endTimeMillis, dryRun: true, report: value, plan });
          printLine(`dry run: ${cutoff}`);
          printLine(reportText(value));
          if (plan) printPlan(plan);
          printLine("Run again with --execute to delete them.");
          return;
        }
        if (!options.watch) {
          if (json) printJson({ taskId: value });
          else printLine(`started task ${value}: ${cutoff} (mdp tasks watch ${value})`);
          return;
        }
        (json ? process.stderr : process.stdout).write(`started task ${value}: deleting ${cutoff}\n`);
        process.exitCode = await watchTask(client, value, { json, intervalMs: options.interval });
      },
    );

  const tasks = program
    .command("tasks")
    .description("asynchronous tasks (truncations, test runs): list, status, cancel, watch, rethrottle");

  tasks
    .command("list")
    .description("tasks, newest first")
    .option("--type <type>", TASK_TYPES.join(" or "), oneOf(TASK_TYPES))
    .option("--state <state>", TASK_STATES.join(", "), oneOf(TASK_STATES))
    .option("--created-by <urn>", "only tasks this user created ('me' for yourself)")
    .option("--created-after <when>", `only tasks created after: ${INSTANT_HELP}`)
    .option("--created-before <when>", "only tasks created before (same forms)")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-100)", wholeNumber(1, 100), 20)
    .action(
      async (
        options: {
          type?: (typeof TASK_TYPES)[number];
          state?: (typeof TASK_STATES)[number];
          createdBy?: string;
          createdAfter?: string;
          createdBefore?: string;
          start: number;
          count: number;
        },
        command: Command,
      ) => {
        const client = apiClient();
        const page = await client.action("/operations?action=listTasks", {
          type: options.type,
          state: options.state,
          createdBy: await resolveMe(client, options.createdBy),
          createdAfter:
            options.createdAfter === undefined ? undefined : parseInstant("--created-after", options.createdAfter),
          createdBefore:
            options.createdBefore === undefined ? undefined : parseInstant("--created-before", options.createdBefore),
          start: options.start,
          count: options.count,
        });
        if (globalsOf(command).json) return printJson(page);
        printTable(
          ["task", "type", "state", "progress", "created by", "created", "finished"],
          page.tasks.map((t) => [
            t.taskId,
            t.type,
            t.state,
            describeProgress(t),
            t.createdBy ?? "-",
            formatTime(t.createdAt),
            formatTime(t.finishedAt),
          ]),
          { shorten: ["progress"] },
        );
        printLine(pageLine(page.start, page.tasks.length, page.total, "tasks"));
      },
    );

  tasks
    .command("status")
    .description("a task's state, progress, request and result")
    .argument("<taskId>")
    .action(async (taskId: string, _options: unknown, command: Command) => {
      const status = await apiClient().action("/operations?action=getTaskStatus", { taskId });
      if (globalsOf(command).json) return printJson(status);
      printStatus(status);
    });

  tasks
    .command("cancel")
    .description("cancel a waiting or active task (an active truncation stops after its current batch)")
    .argument("<taskId>")
    .option("-y, --yes", YES_HELP)
    .action(async (taskId: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`cancel task ${taskId}`, options);
      const status = await client.action("/operations?action=cancelTask", { taskId });
      if (globalsOf(command).json) return printJson(status);
      printLine(
        status.state === "cancelled"
          ? `task ${taskId} cancelled`
          : `cancellation requested: task ${taskId} stops after its current batch (mdp tasks watch ${taskId})`,
      );
    });

  tasks
    .command("rethrottle")
    .description("change a waiting or running truncation's pace (rows per second of its batch deletes)")
    .argument("<taskId>")
    .argument("<rowsPerSecond>", PACE_HELP, (v: string) => parsePace("it", v))
    .action(async (taskId: string, pace: number | null, _options: unknown, command: Command) => {
      const status = await requestRethrottle(apiClient(), taskId, pace);
      if (globalsOf(command).json) return printJson(status);
      printLine(paceLine(taskId, status.rowsPerSecond));
    });

  tasks
    .command("watch")
    .description("follow a task to its end: a progress bar on a terminal, a line per change otherwise")
    .argument("<taskId>")
    .option("--interval <ms>", "how often to poll", interval(), 500)
    .addHelpText(
      "after",
      "\nCtrl-C on a terminal asks whether to cancel the task or change a truncation's pace. Exit 0 when it completed, 5 when it failed or was cancelled.",
    )
    .action(async (taskId: string, options: { interval: number }, command: Command) => {
      const { json } = globalsOf(command);
      process.exitCode = await watchTask(apiClient(), taskId, { json, intervalMs: options.interval });
    });
}

/** The widest a request or result is shown in the table: the whole of it is `--json`'s. */
const CELL_CHARS = 100;

/** An evaluate answer's counts, or undefined for anything else. */
function countsOf(value: unknown): { passing: number; failing: number; notApplicable?: number } | undefined {
  const v = value as { passing?: unknown; failing?: unknown; notApplicable?: unknown } | null;
  if (!v || !Array.isArray(v.passing) || !Array.isArray(v.failing)) return undefined;
  return {
    passing: v.passing.length,
    failing: v.failing.length,
    ...(Array.isArray(v.notApplicable) && { notApplicable: v.notApplicable.length }),
  };
}

const describeCounts = (c: { passing: number; failing: number; notApplicable?: number }) =>
  `${c.passing} passing, ${c.failing} failing${c.notApplicable === undefined ? "" : `, ${c.notApplicable} not applicable`}`;

/**
 * A request or result as one table cell: short JSON whole; an evaluate answer (`passing`/`failing` lists of tests), or
 * an evaluation task's result (`{results: {<urn>: <evaluate answer>}}`), as its counts; anything longer cut, saying
 * how to see it all.
 */
export function cellOf(value: unknown): string {
  if (value === null || value === undefined) return "-";
  const json = JSON.stringify(value);
  if (json.length <= CELL_CHARS) return json;
  const answer = countsOf(value);
  if (answer) {
    const urn = (value as { urn?: unknown }).urn;
    return `${typeof urn === "string" ? `${urn}: ` : ""}${describeCounts(answer)} (--json for the rules)`;
  }
  const results = (value as { results?: unknown }).results;
  if (results && typeof results === "object" && !Array.isArray(results)) {
    const entries = Object.entries(results as Record<string, unknown>).map(([urn, a]) => [urn, countsOf(a)] as const);
    if (entries.length > 0 && entries.every(([, counts]) => counts)) {
      if (entries.length === 1) return `${entries[0]![0]}: ${describeCounts(entries[0]![1]!)} (--json for the rules)`;
      const sum = { passing: 0, failing: 0, notApplicable: 0 };
      for (const [, c] of entries) {
        sum.passing += c!.passing;
        sum.failing += c!.failing;
        sum.notApplicable += c!.notApplicable ?? 0;
      }
      return `${entries.length} entities: ${describeCounts(sum)} results (--json for each entity's rules)`;
    }
  }
  return `${json.slice(0, CELL_CHARS)}… (${formatCount(json.length)} characters; --json shows all of it)`;
}

function printStatus(s: TaskStatus): void {
  const text = cellOf;
  printRecord([
    ["task", s.taskId],
    ["type", s.type],
    [
      "state",
      s.cancelRequested && (s.state === "active" || s.state === "waiting") ? `${s.state} (cancel requested)` : s.state,
    ],
    ["progress", describeProgress(s)],
    ...(s.type === "TRUNCATE_TIMESERIES"
      ? [
          ["pace", s.rowsPerSecond === null ? "unthrottled" : `${formatCount(s.rowsPerSecond)} rows/s`] as [
            string,
            string,
          ],
        ]
      : []),
    ["request", text(s.request)],
    ["result", describeResult(s) ?? text(s.result)],
    ["failed because", s.failedReason ?? "-"],
    ["attempts", s.attemptsMade],
    ["created by", s.createdBy ?? "-"],
    ["created", formatTime(s.createdAt)],
    ["started", formatTime(s.startedAt)],
    ["finished", formatTime(s.finishedAt)],
  ]);
}

/** What rethrottle says it did. */
export function paceLine(taskId: string, rowsPerSecond: number | null): string {
  return rowsPerSecond === null
    ? `task ${taskId}: throttle removed (its worker goes as fast as it can from its next batch)`
    : `task ${taskId}: paced at ${formatCount(rowsPerSecond)} rows/s from its next batch`;
}

type DryRunPlan = NonNullable<ActionEnvelope<"/operations?action=truncateTimeseriesAspect">["plan"]>;

/** The dry run's plan, as lines under its sentence (--json has all of it). */
function printPlan(plan: DryRunPlan): void {
  const drop = plan.partitionsToDrop;
  printLine(plan.strategyReason);
  if (drop.count > 0) {
    printTable(
      ["partition to drop", "from", "rows", "bytes"],
      drop.listed.map((p) => [p.partition, formatTime(p.fromMillis), formatCount(p.rows), formatCount(p.bytes)]),
    );
    const more =
      drop.omitted > 0
        ? ` (${formatCount(drop.omitted)} more not listed; --json lists the first ${formatCount(drop.listed.length)})`
        : "";
    printLine(
      `${counted(drop.count, "partition")}: ${counted(drop.rows, "row")}, ${counted(drop.bytes, "byte")}${more}`,
    );
  }
  if (plan.boundary) {
    const b = plan.boundary;
    printLine(
      `${b.partition}: ${formatCount(b.rowsToDelete)} of ${counted(b.rowsInPartition, "row")} in ` +
        `${counted(b.batches, "batch", "batches")} of ${formatCount(b.batchSize)}`,
    );
  }
  printLine(`estimated ${plan.estimate.seconds} s. ${plan.estimate.note}`);
}
