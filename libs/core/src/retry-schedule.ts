/**
 * A webhook delivery's retry schedule (docs/webhooks.md "Retries"): the delay before each attempt, the first counted
 * from the event, each next from the previous attempt. Svix's by default: at once, then 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h and 10 h, eight attempts over about 27 hours.
 */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = "0,5s,5m,30m,2h,5h,10h,10h";

export const RETRY_SCHEDULE_LIMITS = { maxAttempts: 20, maxDelayMs: 24 * 3_600_000 } as const;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `0,5s,5m,…` as delays in ms; throws naming the entry and the bound it breaks. */
export function parseRetrySchedule(text: string): number[] {
  const entries = text.split(",").map((e) => e.trim());
  if (entries.length === 0 || entries.length > RETRY_SCHEDULE_LIMITS.maxAttempts || entries.some((e) => !e)) {
    throw new Error(`must list 1 to ${RETRY_SCHEDULE_LIMITS.maxAttempts} durations, comma-separated`);
  }
  return entries.map((entry) => {
    const match = /^(\d{1,9})(ms|s|m|h)?$/.exec(entry);
    if (!match) throw new Error(`"${entry.slice(0, 32)}" is not a duration (such as 0, 500ms, 5s, 5m, 2h)`);
    const ms = Number(match[1]) * UNIT_MS[match[2] ?? "s"]!;
    if (ms > RETRY_SCHEDULE_LIMITS.maxDelayMs) throw new Error(`"${entry}" is longer than 24 h`);
    return ms;
  });
}

/** The delay before attempt `attemptsMade + 1` (ms); null when the schedule has no attempt left. */
export function nextRetryDelay(schedule: readonly number[], attemptsMade: number): number | null {
  return attemptsMade < schedule.length ? schedule[attemptsMade]! : null;
}
