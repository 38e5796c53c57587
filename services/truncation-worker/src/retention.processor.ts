import type { Worker } from "bullmq";
import { every, makeUrn, type Logger } from "@mdp/core";
import {
  insertAuditEvent,
  recordRetentionRun,
  RETENTION_POLICY_PRIVILEGE,
  retentionDedupKey,
  retentionRunRequest,
  suspendUnlessOwnerMay,
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
  /** ROOT_USER_URN: the root user's built-in policy counts when the owner's privileges are read */
  rootUserUrn: string;
}

/** The audit's `via` of what a schedule did, where a request's says how its caller authenticated. */
const VIA = "retention-schedule";

/**
 * A retention schedule fired: the policy's truncation task, cut at now − retainDays, created as a truncation request
 * creates one (TaskLifecycle.create with the policy's dedup key: while its previous task is waiting or active the run
 * joins it) with its audit rows and the policy's lastTaskId in the same transaction, then queued. The task is created
 * in the name of the policy's owner — whoever last created, changed or resumed it — with the owner's privileges read
 * from PostgreSQL at each firing: when the owner no longer holds MANAGE_SYSTEM_OPERATIONS the policy is suspended
 * (`retentionPolicy.suspended`, a warning) and this and later firings start nothing until a holder resumes it. (No
 * per-actor limit counts truncations, so none counts these firings; the schedule's minimum interval bounds them.) A
 * policy deleted meanwhile removes its leftover schedule.
 */
export function createRetentionHandler(deps: RetentionDeps): JobHandler<"retention"> {
  return async ({ policyId }) => {
    const policy = await deps.db.prisma.retentionPolicy.findUnique({ where: { id: policyId } });
    if (!policy) {
      await deps.schedules.remove(policyId);
      deps.logger.info({ policyId }, "retention policy is gone: removed its schedule");
      return { removedSchedule: true };
    }
    // Suspended: nothing starts and nothing is written until someone who may resumes it.
    if (policy.suspendedAt !== null) return { skipped: "SUSPENDED" };
    const policyUrn = makeUrn(deps.urnNamespace, "retentionPolicy", policy.id);
    const actorUrn = policy.ownerUrn;
    const check = await suspendUnlessOwnerMay(deps.db.prisma, {
      work: { kind: "RETENTION_POLICY", id: policy.id, urn: policyUrn },
      ownerUrn: actorUrn,
      ownerTokenId: policy.ownerTokenId,
      needs: [RETENTION_POLICY_PRIVILEGE],
      rootUserUrn: deps.rootUserUrn,
      action: "retentionPolicy.suspended",
      via: VIA,
    });
    if (!check.mayRun) {
      if (check.suspended) {
        deps.logger.warn(
          { policy: policyUrn, owner: actorUrn, missingPrivileges: check.missing },
          "retention policy suspended: its owner no longer holds what it needs",
        );
      }
      return { suspended: check.missing };
    }
    const request = retentionRunRequest(policy, policyUrn, Date.now());
    const { dryRun: _, ...operation } = request;
    const { taskId, existing } = await deps.tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request,
        dedupKey: retentionDedupKey(policy.id),
        progress: { deleted: 0, toDelete: 0, batches: 0, percent: 0 },
        createdBy: actorUrn,
        what: "a retention run's truncation task",
        afterInsert: async (tx, id) => {
          await recordRetentionRun(tx, policy.id, id);
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
  const reconcileCounted = async () => {
    const policies = await deps.db.prisma.retentionPolicy.findMany({ select: { id: true, cron: true } });
    const { upserted, removed } = await schedules.reconcile(policies);
    if (upserted + removed > 0) deps.logger.info({ upserted, removed }, "retention schedules reconciled");
    return { upserted, removed };
  };
  const reconcile = async () => {
    await reconcileCounted();
  };
  const loop = every(
    "retention-reconcile",
    RETENTION_RECONCILE_MS,
    () =>
      reconcileCounted().catch((error: unknown) => {
        deps.logger.warn({ err: error }, "could not reconcile retention schedules; trying again in a minute");
        return undefined;
      }),
    { logger: deps.logger, runAtStart: true },
  );
  void worker.run();
  return {
    worker,
    reconcile,
    stop: async () => {
      await loop.stop();
      await worker.close();
      await scheduleQueue.close();
    },
  };
}
