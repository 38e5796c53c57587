import { CronExpressionParser, type CronExpression } from "cron-parser";
import { getNextMillis, type JobsOptions, type Queue } from "bullmq";
import type { QueueKey } from "./names";
import type { Payload } from "./payloads";

/** Every schedule's cron is evaluated in UTC, whatever the TZ of the process that upserts or fires it. */
export const SCHEDULE_TIMEZONE = "UTC";

/** When `cron` fires next after `fromMillis`, as BullMQ computes it (in UTC); undefined when it never fires again. */
export function nextCronFiring(cron: string, fromMillis = Date.now()): number | undefined {
  return getNextMillis(fromMillis, { pattern: cron, tz: SCHEDULE_TIMEZONE });
}

/** The latest slot of `cron` at or before `atMillis` (epoch ms), as BullMQ's cron-parser reads it in UTC; undefined: none. */
export function previousCronSlot(cron: string, atMillis = Date.now()): number | undefined {
  try {
    return CronExpressionParser.parse(cron, {
      tz: SCHEDULE_TIMEZONE,
      currentDate: new Date(atMillis + 1),
    })
      .prev()
      .getTime();
  } catch {
    return undefined;
  }
}

/** How many slots of `cron` fall strictly between two of its slots, counted up to `cap`. */
export function cronSlotsBetween(cron: string, afterMillis: number, beforeMillis: number, cap = 100_000): number {
  let count = 0;
  try {
    const slots = CronExpressionParser.parse(cron, {
      tz: SCHEDULE_TIMEZONE,
      currentDate: new Date(afterMillis),
    });
    while (count < cap && slots.next().getTime() < beforeMillis) count++;
  } catch {
    // no further slot
  }
  return count;
}

/** The longest cron pattern a schedule (retention policy, scheduled test) may have (docs/limits.md). */
export const MAX_CRON_LENGTH = 256;

/** How many firings `cronPatternProblem` looks at to find the shortest interval of a pattern. */
export const CRON_INTERVAL_SAMPLE = 100;

const CRON_SHAPE =
  "a cron pattern of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), evaluated in UTC";

// cron-parser at the exact version BullMQ pins (one copy in the lockfile), so a pattern accepted here is one its job
// schedulers accept; parsed once and iterated, where getNextMillis would parse the pattern again for every firing.

/**
 * Why a job scheduler could not use `pattern`, or undefined when it can: the number of fields, what cron-parser says
 * of it, a pattern that never fires, and (with `minIntervalSeconds`) two of its next CRON_INTERVAL_SAMPLE firings
 * closer together than that. The text quotes the pattern and names the limit, never a stack.
 */
export function cronPatternProblem(pattern: string, minIntervalSeconds?: number): string | undefined {
  const fields = pattern.trim().split(/\s+/).length;
  if (fields < 5 || fields > 6) return `'${pattern}' has ${fields} field(s); expected ${CRON_SHAPE}`;
  let firings: CronExpression;
  try {
    firings = CronExpressionParser.parse(pattern, { tz: SCHEDULE_TIMEZONE, currentDate: new Date() });
    if (nextCronFiring(pattern) === undefined) return `'${pattern}' never fires`;
  } catch (error) {
    return `'${pattern}' is not ${CRON_SHAPE} (${error instanceof Error ? error.message : "unparsable"})`;
  }
  if (minIntervalSeconds === undefined) return undefined;
  try {
    let previous = firings.next().getTime();
    for (let i = 1; i < CRON_INTERVAL_SAMPLE; i++) {
      const next = firings.next().getTime();
      if (next - previous < minIntervalSeconds * 1000) {
        return (
          `'${pattern}' fires ${(next - previous) / 1000} s apart (${new Date(previous).toISOString()} and ` +
          `${new Date(next).toISOString()}); a schedule may fire at most once every ${minIntervalSeconds} s`
        );
      }
      previous = next;
    }
  } catch {
    // cron-parser throws once a pattern has no further firing (a date that does not come again): nothing too close.
  }
  return undefined;
}

/** A schedule: its id (unique within its queue's schedules) and cron pattern. */
export interface CronScheduled {
  id: string;
  cron: string;
}

export interface CronSchedulesOptions<Q extends QueueKey> {
  /** names this kind of schedule's BullMQ job schedulers: `<prefix><id>` (no ':' in ids: BullMQ builds keys with it) */
  idPrefix: string;
  /** the name of the jobs each firing creates (the dashboard shows it) */
  jobName: string;
  /** each firing's job data: what the worker needs to find the schedule's row */
  jobData: (id: string) => Payload<Q>;
  jobOptions: Omit<JobsOptions, "jobId">;
}

/**
 * Cron schedules as BullMQ job schedulers (`upsertJobScheduler`/`removeJobScheduler`): one scheduler per schedule id,
 * fired by Redis whichever processes run (not timers in a process), each firing one job on the queue that a worker
 * turns into the schedule's task. The rows of the service that owns the schedules are the source of truth: `reconcile`
 * makes the schedulers of this kind (by id prefix) match them, so a write whose scheduler step Redis refused converges.
 * Retention policies (retention-schedules.ts) and scheduled tests are both schedules of this class; @mdp/schedules'
 * schedule sync is the one caller of its writes.
 */
export class CronSchedules<Q extends QueueKey> {
  constructor(
    readonly queue: Queue,
    private readonly options: CronSchedulesOptions<Q>,
  ) {}

  schedulerId(id: string): string {
    return `${this.options.idPrefix}${id}`;
  }

  async upsert(schedule: CronScheduled): Promise<void> {
    await this.queue.upsertJobScheduler(
      this.schedulerId(schedule.id),
      { pattern: schedule.cron, tz: SCHEDULE_TIMEZONE },
      { name: this.options.jobName, data: this.options.jobData(schedule.id), opts: this.options.jobOptions },
    );
  }

  /**
   * Queues one firing of schedule `id` now, for its slot `slotMillis` that passed without one (its job scheduler was
   * lost with Redis's data): the same job a firing of its scheduler makes, under an id per slot, so asking twice for
   * one slot queues it once. The firing claims its slot (schedule_slot) before doing anything, so it never runs a slot
   * twice either.
   */
  async fireLate(id: string, slotMillis: number): Promise<void> {
    await this.queue.add(this.options.jobName, this.options.jobData(id), {
      ...this.options.jobOptions,
      jobId: `late-${this.schedulerId(id)}-${slotMillis}`,
    });
  }

  /** Whether there was a schedule to remove. */
  async remove(id: string): Promise<boolean> {
    return this.queue.removeJobScheduler(this.schedulerId(id));
  }

  /** When each schedule fires next (epoch ms), by id; absent: not scheduled. */
  async nextRuns(ids: readonly string[]): Promise<Map<string, number>> {
    const found = await Promise.all(ids.map((id) => this.queue.getJobScheduler(this.schedulerId(id))));
    const next = new Map<string, number>();
    ids.forEach((id, i) => {
      const at = found[i]?.next;
      if (at !== undefined && at !== null) next.set(id, Number(at));
    });
    return next;
  }

  /**
   * Makes the schedulers of this kind match `schedules`: a missing or different one is upserted, one whose row is gone
   * is removed. Converges whatever failed before (Redis refusing after a row was written or deleted).
   */
  async reconcile(
    schedules: readonly CronScheduled[],
  ): Promise<{ upserted: number; removed: number; upsertedIds: string[] }> {
    const prefix = this.options.idPrefix;
    const schedulers = await this.queue.getJobSchedulers(0, -1);
    const existing = new Map(
      schedulers.filter((s) => s.key.startsWith(prefix)).map((s) => [s.key.slice(prefix.length), s]),
    );
    const upsertedIds: string[] = [];
    for (const schedule of schedules) {
      const current = existing.get(schedule.id);
      existing.delete(schedule.id);
      if (current?.pattern === schedule.cron && current.tz === SCHEDULE_TIMEZONE) continue;
      await this.upsert(schedule);
      upsertedIds.push(schedule.id);
    }
    for (const id of existing.keys()) await this.remove(id);
    return { upserted: upsertedIds.length, removed: existing.size, upsertedIds };
  }
}
