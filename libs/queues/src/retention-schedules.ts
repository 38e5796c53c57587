import { CronSchedules, type CronScheduled } from "./cron-schedules";
import { scheduleJobOptions } from "./job-options";

const SCHEDULER_PREFIX = "retention-policy-";

/** The job scheduler of a policy: one id per policy, so each firing is one job whichever processes run. */
export function retentionSchedulerId(policyId: string): string {
  return `${SCHEDULER_PREFIX}${policyId}`;
}

/** What a schedule needs of its policy. */
export type ScheduledPolicy = CronScheduled;

/**
 * The BullMQ job schedulers of retention policies, on the `retention-schedules` queue (cron-schedules.ts): one per
 * policy, each firing one job that a truncation worker turns into the policy's truncation task. The policy rows are
 * the source of truth; only @mdp/schedules' schedule sync writes these schedulers (the gateway reads their next runs).
 */
export class RetentionSchedules extends CronSchedules<"retention"> {
  constructor(queue: ConstructorParameters<typeof CronSchedules<"retention">>[0]) {
    super(queue, {
      idPrefix: SCHEDULER_PREFIX,
      jobName: "retention",
      jobData: (policyId) => ({ policyId }),
      jobOptions: scheduleJobOptions(),
    });
  }
}
