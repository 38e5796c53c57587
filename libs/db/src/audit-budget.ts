import type { AuditEventInput } from "./audit";

/** The action of the row that counts an actor's audit rows left out past its budget (docs/audit.md). */
export const AUDIT_SUPPRESSED_ACTION = "audit.suppressed";

/**
 * How many audit rows one actor may cause in one process when a row records an attempt rather than a committed change:
 * the queue dashboard's (written before Bull Board acts on Redis) and refusals of deferred work (a push's test actions
 * its test's owner may not write). A token bucket per actor: `capacity` rows at once, refilled at `perMinute`. Rows
 * written in a change's own transaction never go through here: a committed change always keeps its row.
 *
 * Two ways to spend it: `take` for a row that must precede its action and may not be dropped (the caller refuses the
 * action, 429, when it says no), `admit` for refusal rows, where the excess is counted and written as one
 * `audit.suppressed` row before the actor's next admitted row.
 */
export class AuditBudget {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly suppressed = new Map<
    string,
    { count: number; actions: Record<string, number>; since: number; until: number }
  >();

  constructor(
    readonly capacity: number = AUDIT_BUDGET.capacity,
    readonly perMinute: number = AUDIT_BUDGET.perMinute,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one row's worth for `actorUrn`: the seconds to wait before one is free, or 0 when it was taken. */
  take(actorUrn: string): number {
    const now = this.now();
    const perMs = this.perMinute / 60_000;
    const bucket = this.buckets.get(actorUrn);
    const tokens = bucket ? Math.min(this.capacity, bucket.tokens + (now - bucket.at) * perMs) : this.capacity;
    if (tokens < 1) {
      this.buckets.set(actorUrn, { tokens, at: now });
      return Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    }
    // Re-inserted so the map's order is least recently used first, the order it is trimmed in.
    this.buckets.delete(actorUrn);
    this.buckets.set(actorUrn, { tokens: tokens - 1, at: now });
    if (this.buckets.size > AUDIT_BUDGET.actors) this.buckets.delete(this.buckets.keys().next().value!);
    return 0;
  }

  /**
   * Of refusal rows, those to write now: each within its actor's budget, preceded by one `audit.suppressed` row when
   * that actor had rows left out since its last admitted one (`count`, `actions` by name, `since`/`until` epoch ms).
   * What is left out is counted, never silently lost while the process runs.
   */
  admit(events: readonly AuditEventInput[]): AuditEventInput[] {
    const admitted: AuditEventInput[] = [];
    for (const event of events) {
      const now = this.now();
      if (this.take(event.actorUrn) > 0) {
        const left = this.suppressed.get(event.actorUrn) ?? { count: 0, actions: {}, since: now, until: now };
        left.count++;
        left.actions[event.action] = (left.actions[event.action] ?? 0) + 1;
        left.until = now;
        this.suppressed.set(event.actorUrn, left);
        if (this.suppressed.size > AUDIT_BUDGET.actors) this.suppressed.delete(this.suppressed.keys().next().value!);
        continue;
      }
      const left = this.suppressed.get(event.actorUrn);
      if (left) {
        this.suppressed.delete(event.actorUrn);
        admitted.push({
          actorUrn: event.actorUrn,
          action: AUDIT_SUPPRESSED_ACTION,
          targetUrn: null,
          details: { ...left, via: "audit-budget" },
        });
      }
      admitted.push(event);
    }
    return admitted;
  }
}

/**
 * The defaults (docs/limits.md "Audit trail"): a burst of 30 rows, then one every 2 s, per actor; at most 10,000
 * actors remembered per process (the least recently active forgotten first, which can only give one a fresh burst).
 */
export const AUDIT_BUDGET = { capacity: 30, perMinute: 30, actors: 10_000 } as const;
