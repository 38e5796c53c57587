import type { Prisma } from "../generated/prisma/client";

/** A retention day: 86,400,000 ms, whatever the calendar (no leap seconds, no daylight saving). */
export const RETENTION_DAY_MS = 86_400_000;

/** Rows per delete of a retention run's truncation: truncateTimeseriesAspect's default batchSize. */
export const RETENTION_BATCH_SIZE = 10_000;

/** A run keeps the rows of the last `retainDays` days: it truncates before `now − retainDays` (never before 0). */
export function retentionCutoff(retainDays: number, nowMillis: number): number {
  return Math.max(0, nowMillis - retainDays * RETENTION_DAY_MS);
}

/**
 * The dedup key of every run of one policy, scheduled or manual: a run while the policy's previous task is still
 * waiting or active joins that task instead of starting a second truncation of the same aspect.
 */
export function retentionDedupKey(policyId: string): string {
  return `retention-policy:${policyId}`;
}

/** What a run's truncation task asks, as getTaskStatus shows it: a truncation request naming its policy. */
export interface RetentionRunRequest {
  entityType: string;
  aspect: string;
  endTimeMillis: number;
  dryRun: false;
  batchSize: number;
  retentionPolicy: string;
}

export function retentionRunRequest(
  policy: { entityType: string; aspect: string; retainDays: number },
  policyUrn: string,
  nowMillis: number,
): RetentionRunRequest {
  return {
    entityType: policy.entityType,
    aspect: policy.aspect,
    endTimeMillis: retentionCutoff(policy.retainDays, nowMillis),
    dryRun: false,
    batchSize: RETENTION_BATCH_SIZE,
    retentionPolicy: policyUrn,
  };
}

/** The policy's latest task, written in the transaction that creates the task. */
export async function recordRetentionRun(tx: Prisma.TransactionClient, policyId: string, taskId: string) {
  await tx.retentionPolicy.updateMany({ where: { id: policyId }, data: { lastTaskId: taskId } });
}
