import { createHash } from "node:crypto";
import { z } from "zod";
import { badInput, type EntityRegistry, type Logger } from "@mdp/core";
import {
  planTruncation,
  recordRetentionRun,
  retentionDedupKey,
  type Database,
  type Prisma,
  type RetentionRunRequest,
  type TimeseriesStore,
  type TruncationPlan,
} from "@mdp/db";
import type { Producer } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import { recordAudit } from "../audit/audit.service";
import type { Actor } from "../auth/actor";
import { parseBody } from "../shared/validate";
import { taskUrn } from "./task.service";
import { dryRunPlanOf, MAX_ROWS_PER_SECOND, MIN_ROWS_PER_SECOND, type DryRunPlan } from "./truncation-plan";

const wholeNumber = (what: string) => z.number({ error: `must be ${what}` }).int({ error: `must be ${what}` });

/** A truncation's pace, as truncateTimeseriesAspect and rethrottleTask take it. */
const paceText = `a whole number of rows per second from ${MIN_ROWS_PER_SECOND} to ${MAX_ROWS_PER_SECOND}`;
export const rowsPerSecond = wholeNumber(paceText)
  .min(MIN_ROWS_PER_SECOND, { error: `must be ${paceText}` })
  .max(MAX_ROWS_PER_SECOND, { error: `must be ${paceText}` });

export const truncateRequest = z.strictObject({
  entityType: z.string({ error: "is required (a string)" }).min(1, { error: "is required" }),
  aspect: z.string({ error: "is required (a string)" }).min(1, { error: "is required" }),
  endTimeMillis: wholeNumber("a whole number of epoch milliseconds").nonnegative({ error: "must be 0 or more" }),
  dryRun: z.boolean({ error: "must be true or false" }).default(true),
  batchSize: wholeNumber("a whole number from 1 to 1000000").min(1).max(1_000_000).default(10_000),
  timeoutSeconds: wholeNumber("a whole number of seconds, at least 1").min(1).optional(),
  // DataHub's choice between its two Elasticsearch strategies; here they only name the strategy the dry run reports
  // (docs/datahub-clients.md): what is deleted, and how, is the same.
  forceDeleteByQuery: z.boolean({ error: "must be true or false" }).optional(),
  forceReindex: z.boolean({ error: "must be true or false" }).optional(),
  // The pace of its batch deletes (rethrottleTask changes it); the dry run's estimate counts it.
  rowsPerSecond: rowsPerSecond.optional(),
});

export type TruncateRequest = Omit<z.output<typeof truncateRequest>, "forceDeleteByQuery" | "forceReindex">;

/** truncateTimeseriesAspect's answer: `value` (the dry run's sentence, or the task id), and a dry run's plan. */
export interface TruncateAnswer {
  value: string;
  plan?: DryRunPlan;
}

export interface TruncationServiceDeps {
  db: Database;
  registry: EntityRegistry;
  store: TimeseriesStore;
  producer: Producer<"truncate">;
  logger: Logger;
  urnNamespace: string;
}

/** truncateTimeseriesAspect: the dry-run report, or a durable task and its job (docs/api.md "Operations and tasks"). */
export class TruncationService {
  private readonly tasks: TaskLifecycle;

  private readonly db: Database;
  private readonly registry: EntityRegistry;
  private readonly store: TimeseriesStore;
  private readonly producer: Producer<"truncate">;
  private readonly urnNamespace: string;

  constructor(deps: TruncationServiceDeps) {
    this.db = deps.db;
    this.registry = deps.registry;
    this.store = deps.store;
    this.producer = deps.producer;
    this.urnNamespace = deps.urnNamespace;
    this.tasks = new TaskLifecycle(deps.db, deps.logger);
  }

  /**
   * truncateTimeseriesAspect, for a caller its edge checked for TRUNCATE_TIMESERIES_INDEX (the HTTP action; a
   * retention policy's dry run, whose MANAGE_SYSTEM_OPERATIONS implies it).
   */
  async truncate(actor: Actor, body: unknown): Promise<TruncateAnswer> {
    const { forceDeleteByQuery, forceReindex, ...parsed } = parseBody(truncateRequest, body);
    if (forceDeleteByQuery !== undefined && forceDeleteByQuery === forceReindex) {
      throw badInput("Set only one of forceDeleteByQuery and forceReindex to true (as DataHub asks).");
    }
    // 404 listing the known ones; a lower-case spelling (DataHub's index names) becomes the registered name
    const request = { ...parsed, aspect: this.registry.timeseriesIndex(parsed.entityType, parsed.aspect).aspectName };
    if (request.dryRun) {
      const ref = { entityType: request.entityType, aspectName: request.aspect };
      const plan = await planTruncation(this.db.pool, await this.store.partitions(ref), request.endTimeMillis);
      const forced = forceDeleteByQuery ? "deleteByQuery" : forceReindex ? "reindex" : undefined;
      return {
        value: report(forced ? { ...plan, strategy: forced } : plan),
        plan: await dryRunPlanOf(this.db.pool, plan, {
          batchSize: request.batchSize,
          rowsPerSecond: request.rowsPerSecond,
          ...(forced && { forced }),
        }),
      };
    }
    return { value: await this.start(actor, request) };
  }

  /**
   * A retention policy's run (runRetentionPolicy with dryRun: false): the same truncation task as a request, but
   * deduplicated per policy (a run while the policy's previous task is waiting or active joins it), and recorded as
   * the policy's last task in the task's own transaction. The truncation worker starts scheduled runs the same way.
   */
  async startRetentionRun(actor: Actor, policyId: string, request: RetentionRunRequest): Promise<string> {
    return this.start(actor, request, {
      dedupKey: retentionDedupKey(policyId),
      afterInsert: async (tx, id) => {
        await recordRetentionRun(tx, policyId, id);
        await recordAudit(tx, actor, "retentionPolicy.run", request.retentionPolicy, { taskId: id, trigger: "manual" });
      },
      afterJoin: async (tx, id) => {
        await recordAudit(tx, actor, "retentionPolicy.run", request.retentionPolicy, {
          taskId: id,
          trigger: "manual",
          joined: true,
        });
      },
    });
  }

  /**
   * Identical requests share the task that is still waiting or active, unless it is being cancelled (it will not do
   * what is asked again); otherwise a new task row with its audit row, then its job. A dry run changes nothing and is
   * not audited.
   */
  private async start(
    actor: Actor,
    request: TruncateRequest | RetentionRunRequest,
    options: {
      dedupKey?: string;
      afterInsert?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>;
      afterJoin?: (tx: Prisma.TransactionClient, taskId: string) => Promise<void>;
    } = {},
  ): Promise<string> {
    // The pace is the row's (rethrottleTask changes it), not the job's, and a request at another pace joins the task.
    const { dryRun: _, ...rest } = request;
    const { rowsPerSecond: pace, ...operation } = { rowsPerSecond: undefined, ...rest };
    const dedupKey =
      options.dedupKey ??
      createHash("sha256")
        .update(
          JSON.stringify({
            ...operation,
            timeoutSeconds: ("timeoutSeconds" in operation && operation.timeoutSeconds) || null,
          }),
        )
        .digest("hex");
    const audited = (taskId: string) => ({
      taskId,
      ...operation,
      ...(pace != null && { rowsPerSecond: pace }),
    });
    const { taskId } = await this.tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request,
        dedupKey,
        progress: { deleted: 0, toDelete: 0, batches: 0, percent: 0 },
        createdBy: actor.urn,
        createdVia: actor.tokenId ?? null,
        rowsPerSecond: pace ?? null,
        what: "a truncation task",
        // The new task and its audit row commit together; a request that joins an identical running task is audited
        // too (`joined`): each caller's deletion is on record, whoever's task carries it out.
        afterInsert: async (tx, id) => {
          await recordAudit(tx, actor, "timeseries.truncate", taskUrn(this.urnNamespace, id), audited(id));
          await options.afterInsert?.(tx, id);
        },
        afterJoin:
          options.afterJoin ??
          ((tx, id) =>
            recordAudit(tx, actor, "timeseries.truncate", taskUrn(this.urnNamespace, id), {
              ...audited(id),
              joined: true,
            })),
      },
      {
        enqueue: (id) => this.producer.enqueue(id, { taskId: id, ...operation }),
        jobExists: async (id) => Boolean(await this.producer.getJob(id)),
      },
    );
    return taskId;
  }
}

/** The dry-run report (docs/api.md "Operations and tasks", truncateTimeseriesAspect). */
export function report(plan: TruncationPlan): string {
  // Two decimals as the contract shows, but 100.00% only when every row goes and 0.00% only when none does: an operator
  // reads those as "all" and "nothing".
  const share = plan.totalRows === 0 ? 0 : (100 * plan.toDelete) / plan.totalRows;
  const partial = plan.toDelete > 0 && plan.toDelete < plan.totalRows;
  const percent = partial ? Math.min(99.99, Math.max(0.01, share)) : share;
  const strategy =
    plan.strategy === "reindex"
      ? "Reindexing the aspect without the deleted records."
      : "Issuing a delete by query request.";
  return (
    `Delete ${plan.toDelete} out of ${plan.totalRows} rows (${percent.toFixed(2)}%). ${strategy} ` +
    "This was a dry run. Run with dryRun = false to execute."
  );
}
