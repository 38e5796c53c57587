import type { Worker } from "bullmq";
import { makeUrn, type Logger } from "@mdp/core";
import {
  insertAuditEvent,
  recordRetentionRun,
  retentionDedupKey,
  retentionRunRequest,
  scheduledActorMayRun,
  type Database,
} from "@mdp/db";
import {
  createWorker,
  Producer,
  RetentionSchedules,
  type JobHandler,
  type JobObserver,
  type RedisConnection,
} from "@mdp/queues";
import type { TaskLifecycle } from "@mdp/tasks";

export interface RetentionDeps {
  db: Database;
  tasks: TaskLifecycle;
  /** the truncation queue's producer: a run's task is an ordinary truncation task */
  truncations: Producer<"truncate">;
  schedules: RetentionSchedules;
  logger: Logger;
  urnNamespace: string;
  /** ROOT_USER_URN: the root user's built-in policy counts when the creator's privileges are read */
  rootUserUrn: string;
}

/** The audit's `via` of what a schedule did, where a request's says how its caller authenticated. */
const VIA = "retention-schedule";

/**
 * What runRetentionPolicy with dryRun false needs (services/gateway/src/operations/retention.service.ts; it implies
 * TRUNCATE_TIMESERIES_INDEX), checked at each firing.
 */
export const RETENTION_RUN_PRIVILEGE = "MANAGE_SYSTEM_OPERATIONS";

/**
 * A retention schedule fired: the policy's truncation task, cut at now − retainDays, created as a truncation request
 * creates one (TaskLifecycle.create with the policy's dedup key: while its previous task is waiting or active the run
 * joins it) with its audit rows and the policy's lastTaskId in the same transaction, then queued. The task is created
 * in the name of the policy's creator, and only while the creator still holds MANAGE_SYSTEM_OPERATIONS, read from
 * PostgreSQL at each firing: otherwise the firing starts nothing, audits `retentionPolicy.run.refused` and logs a
 * warning, and the schedule stays (it runs again once the creator regains the privilege). A policy deleted meanwhile
 * removes its leftover schedule.
 */
export function createRetentionHandler(deps: RetentionDeps): JobHandler<"retention"> {
  return async ({ policyId }) => {
    const policy = await deps.db.prisma.retentionPolicy.findUnique({ where: { id: policyId } });
    if (!policy) {
      await deps.schedules.remove(policyId);
      deps.logger.info({ policyId }, "retention policy is gone: removed its schedule");
      return { removedSchedule: true };
    }
    const policyUrn = makeUrn(deps.urnNamespace, "retentionPolicy", policy.id);
    const mayRun = await scheduledActorMayRun(deps.db.prisma, {
      actorUrn: policy.createdBy,
      privilege: RETENTION_RUN_PRIVILEGE,
      rootUserUrn: deps.rootUserUrn,
      action: "retentionPolicy.run.refused",
      targetUrn: policyUrn,
      via: VIA,
    });
    if (!mayRun) {
      deps.logger.warn(
        { policy: policyUrn, actor: policy.createdBy, missingPrivilege: RETENTION_RUN_PRIVILEGE },
        "retention run refused: the policy's creator no longer holds the privilege; the schedule stays",
      );
      return { refused: RETENTION_RUN_PRIVILEGE };
    }
    const request = retentionRunRequest(policy, policyUrn, Date.now());
    const { dryRun: _, ...operation } = request;
    const { taskId, existing } = await deps.tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request,
        dedupKey: retentionDedupKey(policy.id),
        progress: { deleted: 0, toDelete: 0, batches: 0, percent: 0 },
        createdBy: policy.createdBy,
        what: "a retention run's truncation task",
        afterInsert: async (tx, id) => {
          await recordRetentionRun(tx, policy.id, id);
          const actorUrn = policy.createdBy;
          await insertAuditEvent(tx, {
            actorUrn,
            action: "timeseries.truncate",
            targetUrn: makeUrn(deps.urnNamespace, "task", id),
            details: { taskId: id, ...operation, via: VIA },
          });
          await insertAuditEvent(tx, {
            actorUrn,
            action: "retentionPolicy.run",
            targetUrn: policyUrn,
            details: { taskId: id, trigger: "schedule", via: VIA },
          });
        },
      },
      {
        enqueue: (id) => deps.truncations.enqueue(id, { taskId: id, ...operation }),
        jobExists: async (id) => Boolean(await deps.truncations.queue.getJob(id)),
      },
    );
    deps.logger.info({ policy: policyUrn, taskId, joined: existing }, "retention run");
    return { taskId, joined: existing };
  };
}

/** How often each truncation worker makes the job schedulers match the policy rows (and once at start). */
export const RETENTION_RECONCILE_MS = 60_000;

/**
 * The retention side of a truncation worker process: a BullMQ worker on `retention-schedules` (the schedules' jobs)
 * and the reconciler of the schedules with the policy rows, at start and every minute, which is what converges a
 * policy whose schedule Redis refused when it was written. `stop` closes both (a running job finishes).
 */
export function startRetention(
  deps: Omit<RetentionDeps, "schedules"> & {
    connection: RedisConnection;
    producerConnection: RedisConnection;
    prefix: string;
    observer?: JobObserver;
  },
): { worker: Worker; reconcile: () => Promise<void>; stop: () => Promise<void> } {
  const scheduleQueue = new Producer("retention", deps.producerConnection, deps.prefix);
  const schedules = new RetentionSchedules(scheduleQueue.queue);
  const worker = createWorker("retention", createRetentionHandler({ ...deps, schedules }), {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 1,
    logger: deps.logger,
    observer: deps.observer,
  });
  const reconcile = async () => {
    const policies = await deps.db.prisma.retentionPolicy.findMany({ select: { id: true, cron: true } });
    const { upserted, removed } = await schedules.reconcile(policies);
    if (upserted + removed > 0) deps.logger.info({ upserted, removed }, "retention schedules reconciled");
  };
  const reconcileLogged = () =>
    reconcile().catch((error: unknown) =>
      deps.logger.warn({ err: error }, "could not reconcile retention schedules; trying again in a minute"),
    );
  void reconcileLogged();
  const timer = setInterval(() => void reconcileLogged(), RETENTION_RECONCILE_MS);
  timer.unref();
  void worker.run();
  return {
    worker,
    reconcile,
    stop: async () => {
      clearInterval(timer);
      await worker.close();
      await scheduleQueue.close();
    },
  };
}
