import type { Command } from "commander";
import { usageError } from "../exit-codes";
import type {
  CreateRetentionPolicyMutation,
  CreateRetentionPolicyMutationVariables,
  DeleteRetentionPolicyMutation,
  DeleteRetentionPolicyMutationVariables,
  ListRetentionPoliciesQuery,
  ListRetentionPoliciesQueryVariables,
  RetentionPolicyFieldsFragment,
  RunRetentionPolicyMutation,
  RunRetentionPolicyMutationVariables,
  UpdateRetentionPolicyMutation,
  UpdateRetentionPolicyMutationVariables,
} from "../generated/graphql";
import {
  CREATE_RETENTION_POLICY,
  DELETE_RETENTION_POLICY,
  LIST_RETENTION_POLICIES,
  RUN_RETENTION_POLICY,
  UPDATE_RETENTION_POLICY,
} from "../graphql-operations/retention";
import { apiClient, globalsOf, wholeNumber } from "../options";
import { counted, formatTime, printJson, printLine, printRecord, printTable, reportText } from "../output";
import { confirmDestructive, YES_HELP } from "../terminal";
import { watchTask } from "../watch";
import { pageLine } from "./tokens";

/** The gateway's bounds (docs/limits.md), checked here too so a typo is a usage error before any request. */
const MAX_RETAIN_DAYS = 3650;

type Policy = RetentionPolicyFieldsFragment;

/** When the schedule fires next, or that it is suspended (its firings start nothing until resumed). */
const nextRun = (policy: Policy) =>
  policy.suspendedAt !== null
    ? `suspended since ${formatTime(policy.suspendedAt)}`
    : policy.nextRunTime === null
      ? "not scheduled yet"
      : formatTime(policy.nextRunTime);

function printPolicy(policy: Policy, json: boolean | undefined): void {
  if (json) return printJson(policy);
  printRecord([
    ["policy", policy.urn],
    ["aspect", `${policy.entityType}/${policy.aspect}`],
    ["keeps", counted(policy.retainDays, "day")],
    ["cron (UTC)", policy.cron],
    ["next run", nextRun(policy)],
    ...(policy.suspendedReason ? [["suspended", policy.suspendedReason] as [string, string]] : []),
    ["last task", policy.lastTaskId ? `${policy.lastTaskId} (${policy.lastTaskState ?? "gone"})` : "-"],
    ["created by", policy.createdBy],
    ["runs as", policy.ownerUrn],
  ]);
}

const CRON_HELP = `cron pattern in UTC: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); quote it`;

export function registerRetention(program: Command): void {
  const retention = program
    .command("retention")
    .description("retention policies: keep a time-series aspect to its last N days, on a cron schedule")
    .addHelpText(
      "after",
      `
Each scheduled run is an ordinary truncation task (mdp tasks list) deleting the rows older than now - N days.
Needs MANAGE_SYSTEM_OPERATIONS.

Examples:
  mdp retention create dataset datasetProfile --retain-days 90 --cron '0 3 * * *'
  mdp retention run urn:li:retentionPolicy:<id>             # the dry-run report
  mdp retention run urn:li:retentionPolicy:<id> --execute   # run it now and watch the task`,
    );

  retention
    .command("create")
    .description("create a retention policy; its schedule starts at once")
    .argument("<entityType>", "e.g. dataset (see mdp index-sizes)")
    .argument("<aspect>", "a time-series aspect, e.g. datasetProfile")
    .requiredOption("--retain-days <n>", `days of rows to keep (1-${MAX_RETAIN_DAYS})`, wholeNumber(1, MAX_RETAIN_DAYS))
    .requiredOption("--cron <pattern>", CRON_HELP)
    .action(
      async (entityType: string, aspect: string, options: { retainDays: number; cron: string }, command: Command) => {
        const { createRetentionPolicy: policy } = await apiClient().graphql<
          CreateRetentionPolicyMutation,
          CreateRetentionPolicyMutationVariables
        >(CREATE_RETENTION_POLICY, {
          input: { entityType, aspect, retainDays: options.retainDays, cron: options.cron },
        });
        printPolicy(policy, globalsOf(command).json);
      },
    );

  retention
    .command("list")
    .description("retention policies, newest first, with their next run and last task")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many", wholeNumber(1, 1000), 20)
    .action(async (options: { start: number; count: number }, command: Command) => {
      const { listRetentionPolicies: page } = await apiClient().graphql<
        ListRetentionPoliciesQuery,
        ListRetentionPoliciesQueryVariables
      >(LIST_RETENTION_POLICIES, { input: { start: options.start, count: options.count } });
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["policy", "aspect", "keeps", "cron (UTC)", "next run", "last task", "runs as"],
        page.retentionPolicies.map((p) => [
          p.urn,
          `${p.entityType}/${p.aspect}`,
          `${p.retainDays}d`,
          p.cron,
          p.suspendedAt !== null ? "SUSPENDED" : formatTime(p.nextRunTime),
          p.lastTaskId ? `${p.lastTaskId} (${p.lastTaskState ?? "gone"})` : "-",
          p.ownerUrn,
        ]),
      );
      printLine(
        pageLine(page.start, page.retentionPolicies.length, page.total, "retention policies", "retention policy"),
      );
    });

  retention
    .command("update")
    .description("change a retention policy (its schedule follows)")
    .argument("<urn>", "urn:li:retentionPolicy:<id>")
    .option("--entity-type <type>", "another entity type")
    .option("--aspect <aspect>", "another time-series aspect")
    .option("--retain-days <n>", `days of rows to keep (1-${MAX_RETAIN_DAYS})`, wholeNumber(1, MAX_RETAIN_DAYS))
    .option("--cron <pattern>", CRON_HELP)
    .action(
      async (
        urn: string,
        options: { entityType?: string; aspect?: string; retainDays?: number; cron?: string },
        command: Command,
      ) => {
        const input = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
        if (Object.keys(input).length === 0) {
          throw usageError("give at least one of --entity-type, --aspect, --retain-days, --cron");
        }
        const { updateRetentionPolicy: policy } = await apiClient().graphql<
          UpdateRetentionPolicyMutation,
          UpdateRetentionPolicyMutationVariables
        >(UPDATE_RETENTION_POLICY, { urn, input });
        printPolicy(policy, globalsOf(command).json);
      },
    );

  retention
    .command("delete")
    .description("delete a retention policy and its schedule (a task of it that is running finishes)")
    .argument("<urn>", "urn:li:retentionPolicy:<id>")
    .option("-y, --yes", YES_HELP)
    .action(async (urn: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`delete retention policy ${urn} and its schedule`, options);
      await client.graphql<DeleteRetentionPolicyMutation, DeleteRetentionPolicyMutationVariables>(
        DELETE_RETENTION_POLICY,
        { urn },
      );
      if (globalsOf(command).json) printJson({ urn, deleted: true });
      else printLine(`deleted retention policy ${urn}`);
    });

  retention
    .command("run")
    .description("what the policy would delete now (dry run), or run it now with --execute")
    .argument("<urn>", "urn:li:retentionPolicy:<id>")
    .option("--execute", "really delete: start the policy's truncation task and watch it (default: a dry run)")
    .option("--no-watch", "with --execute: print the task id and return at once")
    .action(async (urn: string, options: { execute?: boolean; watch: boolean }, command: Command) => {
      const { json } = globalsOf(command);
      const client = apiClient();
      const { runRetentionPolicy: value } = await client.graphql<
        RunRetentionPolicyMutation,
        RunRetentionPolicyMutationVariables
      >(RUN_RETENTION_POLICY, { urn, dryRun: !options.execute });
      if (!options.execute) {
        if (json) return printJson({ urn, dryRun: true, report: value });
        printLine(`dry run of ${urn}:`);
        printLine(reportText(value));
        printLine("Run again with --execute to delete them.");
        return;
      }
      if (!options.watch) {
        if (json) printJson({ taskId: value });
        else printLine(`started task ${value} (mdp tasks watch ${value})`);
        return;
      }
      (json ? process.stderr : process.stdout).write(`started task ${value} of ${urn}\n`);
      process.exitCode = await watchTask(client, value, { json });
    });
}
