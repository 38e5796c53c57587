import { getNextMillis, type Queue } from "bullmq";
import { retentionJobOptions } from "./job-options";
import type { Payload } from "./payloads";

/** Every retention cron is evaluated in UTC, whatever the TZ of the process that upserts or fires it. */
export const RETENTION_TIMEZONE = "UTC";

const SCHEDULER_PREFIX = "retention-policy-";

/** The job scheduler of a policy: one id per policy, so every replica that upserts it upserts the same one. */
export function retentionSchedulerId(policyId: string): string {
  return `${SCHEDULER_PREFIX}${policyId}`;
}

/**
 * When `cron` fires next after `fromMillis`, as BullMQ computes it (its cron-parser, in UTC): undefined when it never
 * fires again. Throws cron-parser's error for a pattern it cannot parse.
 */
export function nextCronRun(cron: string, fromMillis = Date.now()): number | undefined {
  return getNextMillis(fromMillis, { pattern: cron, tz: RETENTION_TIMEZONE });
}

/** What a schedule needs of its policy. */
export interface ScheduledPolicy {
  id: string;
  cron: string;
}

/**
 * The BullMQ job schedulers of retention policies, on the `retention-schedules` queue: one per policy, fired by Redis
 * whichever processes run (not timers in a process), each firing one job that a truncation worker turns into the
 * policy's truncation task. The policy rows are the source of truth: `reconcile` makes the schedulers match them.
 */
export class RetentionSchedules {
  constructor(readonly queue: Queue) {}

  async upsert(policy: ScheduledPolicy): Promise<void> {
    const data: Payload<"retention"> = { policyId: policy.id };
    await this.queue.upsertJobScheduler(
      retentionSchedulerId(policy.id),
      { pattern: policy.cron, tz: RETENTION_TIMEZONE },
      { name: "retention", data, opts: retentionJobOptions() },
    );
  }

  /** Whether there was a schedule to remove. */
  async remove(policyId: string): Promise<boolean> {
    return this.queue.removeJobScheduler(retentionSchedulerId(policyId));
  }

  /** When each policy's schedule fires next (epoch ms), by policy id; absent: not scheduled. */
  async nextRuns(policyIds: string[]): Promise<Map<string, number>> {
    const found = await Promise.all(policyIds.map((id) => this.queue.getJobScheduler(retentionSchedulerId(id))));
    const next = new Map<string, number>();
    policyIds.forEach((id, i) => {
      const at = found[i]?.next;
      if (at !== undefined && at !== null) next.set(id, Number(at));
    });
    return next;
  }

  /**
   * Makes the schedulers match `policies`: a missing or different one is upserted, one whose policy is gone is
   * removed. Converges whatever failed before (Redis refusing after a policy row was written or deleted).
   */
  async reconcile(policies: ScheduledPolicy[]): Promise<{ upserted: number; removed: number }> {
    const schedulers = await this.queue.getJobSchedulers(0, -1);
    const byPolicy = new Map(
      schedulers
        .filter((s) => s.key.startsWith(SCHEDULER_PREFIX))
        .map((s) => [s.key.slice(SCHEDULER_PREFIX.length), s]),
    );
    let upserted = 0;
    for (const policy of policies) {
      const current = byPolicy.get(policy.id);
      byPolicy.delete(policy.id);
      if (current?.pattern === policy.cron && current.tz === RETENTION_TIMEZONE) continue;
      await this.upsert(policy);
      upserted++;
    }
    for (const policyId of byPolicy.keys()) await this.remove(policyId);
    return { upserted, removed: byPolicy.size };
  }
}
