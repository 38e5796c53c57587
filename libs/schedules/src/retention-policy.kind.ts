import { makeUrn, SCHEDULE_PRIVILEGES } from "@mdp/core";
import {
  findRetentionPolicy,
  insertAuditEvent,
  listRetentionSchedules,
  recordRetentionRun,
  retentionDedupKey,
  retentionRunRequest,
  type RetentionPolicy,
} from "@mdp/db";
import { RetentionSchedules } from "@mdp/queues";
import type { ScheduleKind } from "./schedule-kind";

/**
 * A retention policy (a retention_policy row): each firing is the policy's truncation task, cut at now − retainDays,
 * created as a truncation request creates one (the policy's dedup key: while its previous task is waiting or active
 * the run joins it) with its audit rows (`timeseries.truncate`, `retentionPolicy.run`) and the policy's lastTaskId in
 * the same transaction, then queued on truncate-timeseries. It acts for the policy's owner (whoever last created,
 * changed or resumed it) and needs MANAGE_SYSTEM_OPERATIONS. No per-actor limit counts truncations, so none counts
 * these firings; the schedule's minimum interval bounds them.
 */
export const retentionPolicyKind: ScheduleKind<RetentionPolicy, "retention"> = {
  name: "retentionPolicy",
  label: "retention policy",
  firingQueue: "retention",
  idOf: (payload) => payload.policyId,
  schedules: (queue) => new RetentionSchedules(queue),
  scheduleId: (id) => id,
  load: findRetentionPolicy,
  list: listRetentionSchedules,
  cronOf: (row) => row.cron,
  urnOf: (row, urnNamespace) => makeUrn(urnNamespace, "retentionPolicy", row.id),
  work: (row, urn) => ({ kind: "RETENTION_POLICY", id: row.id, urn }),
  needs: () => [SCHEDULE_PRIVILEGES.RETENTION_POLICY],
  suspendedAction: "retentionPolicy.suspended",
  missedAction: "retentionPolicy.missed",
  via: "retention-schedule",
  async create(policy, policyUrn, deps) {
    const truncations = deps.producers.truncate;
    if (!truncations) throw new Error("a retention policy fired in a process without the truncate producer");
    const actorUrn = policy.ownerUrn;
    const request = retentionRunRequest(policy, policyUrn, Date.now());
    const { dryRun: _, ...operation } = request;
    const via = this.via;
    return deps.tasks.create(
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
            details: { taskId: id, ...operation, via },
          });
          await insertAuditEvent(tx, {
            actorUrn,
            action: "retentionPolicy.run",
            targetUrn: policyUrn,
            details: { taskId: id, trigger: "schedule", via },
          });
        },
      },
      {
        enqueue: (id) => truncations.enqueue(id, { taskId: id, ...operation }),
        jobExists: async (id) => Boolean(await truncations.queue.getJob(id)),
      },
    );
  },
};
