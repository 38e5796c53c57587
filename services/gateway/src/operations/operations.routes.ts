import type { Router } from "express";
import { z } from "zod";
import type { EntityRegistry } from "@mdp/core";
import { replicaReads, type StaleReads, type TimeseriesStore } from "@mdp/db";
import type { TaskState } from "@mdp/tasks";
import { action, addActions, addGetRoute, Enveloped } from "../http/action-router";
import type { PolicyEngine } from "../policies/policy-engine";
import { esTaskStatus, esTaskStatusRequest } from "./es-task-status";
import { listTasksRequest, type TaskService } from "./task.service";
import { dryRunPlan, MAX_ROWS_PER_SECOND, MIN_ROWS_PER_SECOND } from "./truncation-plan";
import { rowsPerSecond, truncateRequest, type TruncationService } from "./truncation.service";

export interface OperationsDeps {
  registry: EntityRegistry;
  timeseries: TimeseriesStore;
  /** where getIndexSizes reads (Database.stale) */
  reads: StaleReads;
  engine: PolicyEngine;
  truncation: TruncationService;
  tasks: TaskService;
}

const taskRequest = z.strictObject({ taskId: z.string({ error: "is required (a string)" }).min(1) });
const rethrottleRequest = z.strictObject({
  taskId: z.string({ error: "is required (a string)" }).min(1),
  rowsPerSecond: rowsPerSecond.nullable(),
});
const taskStatus = { privilege: "GET_TASK_STATUS", to: "get task status" } as const;

const MB = 1024 * 1024;

const epochMillis = z.number().int();
/** A task's status, as getTaskStatus, cancelTask, listTasks and GET /operations/tasks/<id> answer it. */
const taskStatusAnswer = z.object({
  taskId: z.string(),
  type: z.string().describe("TRUNCATE_TIMESERIES or EVALUATE_TESTS (a runTest, or an evaluation answered 504)"),
  state: z.enum(["waiting", "active", "completed", "failed", "cancelled"] satisfies TaskState[]),
  progress: z
    .record(z.string(), z.unknown())
    .describe("a truncation's {deleted, toDelete, batches, percent}; a test run's {evaluated, total, passing, ...}"),
  request: z.unknown().describe("what was asked, defaults filled in"),
  result: z
    .unknown()
    .describe(
      "once completed: a truncation's {deleted, batches, partitionsDropped, bytesFreed, tableBytes: {before, after}, " +
        "indexBytes: {before, after}}",
    ),
  failedReason: z.string().nullable(),
  attemptsMade: z.number().int(),
  cancelRequested: z.boolean(),
  rowsPerSecond: z
    .number()
    .int()
    .nullable()
    .describe(
      "a truncation's pace asked for (rethrottleTask), null: unthrottled; progress.rowsPerSecond: the pace kept",
    ),
  createdBy: z.string().describe("the urn of the user who asked for it"),
  createdAt: epochMillis,
  startedAt: epochMillis.nullable(),
  finishedAt: epochMillis.nullable(),
});
const indexSizesAnswer = z.object({
  indexSizes: z.array(
    z.object({
      indexName: z.string().describe("DataHub's Elasticsearch index name for the aspect"),
      entityName: z.string(),
      aspectName: z.string(),
      rowCount: z.number().int(),
      sizeInMb: z.number(),
      sizeMb: z.number().describe("the same as sizeInMb (the name DataHub's clients read)"),
      oldestTimestampMillis: epochMillis.nullable(),
      newestTimestampMillis: epochMillis.nullable(),
    }),
  ),
});

/** System operations under /gms/operations (docs/api.md), added to the router of /gms. */
export function addOperationsRoutes(router: Router, deps: OperationsDeps): void {
  addGetRoute(router, "/operations/tasks/:taskId", deps.engine, {
    summary: "A task's status (as getTaskStatus)",
    requires: taskStatus,
    request: taskRequest,
    response: taskStatusAnswer,
    handler: ({ taskId }, actor) => deps.tasks.status(actor, taskId),
  });
  addActions(router, "/operations", deps.engine, {
    truncateTimeseriesAspect: action({
      summary: "Delete an aspect's time-series rows older than a timestamp: a dry-run report, or a task",
      description:
        "`dryRun` (the default) answers a report of what would be deleted; `dryRun: false` starts a task and answers " +
        "its id, to follow with getTaskStatus. An identical request while one is waiting or running shares its task " +
        "(at that task's pace). A dry run also answers `plan` beside `value`: the partitions to drop (rows, bytes), " +
        "the boundary's batches, the strategy and why, and an estimated duration from the rates finished truncations " +
        "measured on this deployment. `rowsPerSecond` paces the batch deletes (rethrottleTask changes it).",
      requires: { privilege: "TRUNCATE_TIMESERIES_INDEX", to: "truncate time-series indexes" },
      request: truncateRequest,
      response: z.string().describe("a dry run: the report (DataHub's sentence); otherwise the task id"),
      alongside: { plan: dryRunPlan.describe("a dry run only: the plan as data") },
      readOnly: (input) => input.dryRun,
      handler: async (input, actor) => {
        const { value, plan } = await deps.truncation.truncate(actor, input);
        return plan ? new Enveloped(value, { plan }) : value;
      },
    }),
    getTaskStatus: action({
      summary: "A task's status: state, progress, result or failure",
      requires: taskStatus,
      request: taskRequest,
      response: taskStatusAnswer,
      handler: ({ taskId }, actor) => deps.tasks.status(actor, taskId),
      // A poll writes nothing: with replicas it would note a WAL position (a statement, a Redis call) every time.
      readOnly: true,
    }),
    getEsTaskStatus: action({
      summary: "DataHub's getEsTaskStatus: a task's status in DataHub's shape",
      description:
        "`task` is the taskId truncateTimeseriesAspect answered; the answer is a JSON text " +
        "`{completed, taskId, status, runTimeNanos}` with `status` what getTaskStatus answers.",
      requires: taskStatus,
      request: esTaskStatusRequest,
      response: z.string().describe("JSON text: {completed, taskId, status, runTimeNanos}"),
      handler: (input, actor) => esTaskStatus(deps.tasks, actor, input),
      readOnly: true,
    }),
    rethrottleTask: action({
      summary: "Change a waiting or running truncation's pace (rows per second of its batch deletes)",
      description:
        `\`rowsPerSecond\`: a whole number from ${MIN_ROWS_PER_SECOND} to ${MAX_ROWS_PER_SECOND}, or null to remove ` +
        "the throttle. The worker keeps it from its next checkpoint, and within a second while it waits for the pace; " +
        "the task stays active with its lease renewed, and its progress shows the pace it keeps. Partition drops are " +
        "not paced. 409 for a finished task or one that is not a truncation.",
      requires: null,
      privilegeNote:
        "The same as cancelTask: TRUNCATE_TIMESERIES_INDEX; an unknown id is the same 403 unless the caller holds " +
        "GET_TASK_STATUS.",
      request: rethrottleRequest,
      response: taskStatusAnswer,
      handler: ({ taskId, rowsPerSecond: pace }, actor) => deps.tasks.rethrottle(actor, taskId, pace),
    }),
    cancelTask: action({
      summary: "Ask a waiting or running task to stop",
      requires: null,
      privilegeNote:
        "TRUNCATE_TIMESERIES_INDEX for a truncation, MANAGE_TESTS for an evaluation or test run; an unknown id is the " +
        "same 403 unless the caller holds GET_TASK_STATUS.",
      request: taskRequest,
      response: taskStatusAnswer,
      handler: ({ taskId }, actor) => deps.tasks.cancel(actor, taskId),
    }),
    listTasks: action({
      summary: "Tasks, newest first, filtered by type, state, creator and creation time",
      description:
        "`state` is the state getTaskStatus shows (a running task whose worker stopped responding is waiting); " +
        "`createdAfter` is inclusive, `createdBefore` exclusive (epoch ms). Pages of 1 to 100 (default 20), " +
        "starting at most 10,000 in: page further back with createdBefore.",
      requires: { privilege: "GET_TASK_STATUS", to: "list tasks" },
      request: listTasksRequest,
      response: z.object({
        start: z.number().int(),
        count: z.number().int(),
        total: z.number().int(),
        tasks: z.array(taskStatusAnswer).describe("newest first"),
      }),
      handler: (input, actor) => deps.tasks.list(actor, input),
      readOnly: true,
    }),
    getIndexSizes: action({
      summary: "Rows, size and time range of every time-series aspect that holds data",
      requires: { privilege: "GET_TIMESERIES_INDEX_SIZES", to: "get time-series index sizes" },
      request: z.strictObject({}),
      response: indexSizesAnswer,
      readOnly: true,
      handler: async () => {
        const registered = new Map(
          deps.registry.timeseriesIndexes().map((i) => [`${i.entityType}\u0000${i.aspectName}`, i]),
        );
        const sizes = await replicaReads.timeseriesSizes(deps.reads, deps.timeseries);
        return {
          indexSizes: sizes.flatMap((s) => {
            const index = registered.get(`${s.entityType}\u0000${s.aspectName}`);
            if (!index) return []; // data of an aspect no longer in the registry
            return [
              {
                indexName: index.indexName,
                entityName: s.entityType,
                aspectName: s.aspectName,
                rowCount: s.rowCount,
                sizeInMb: Math.round((s.sizeBytes / MB) * 100) / 100,
                // DataHub's deprecated name of sizeInMb, still read by older clients: the same number
                sizeMb: Math.round((s.sizeBytes / MB) * 100) / 100,
                oldestTimestampMillis: s.oldestTimestampMillis,
                newestTimestampMillis: s.newestTimestampMillis,
              },
            ];
          }),
        };
      },
    }),
  });
}
