/**
 * How many audit rows one actor may cause in one gateway process when the row is not part of a committed change — the
 * queue dashboard's, written before Bull Board acts on Redis (docs/audit.md "When the row is written"). A token bucket
 * per actor: `capacity` rows at once, refilled at `perMinute`. A row that must precede its action cannot be dropped,
 * so the caller refuses the action instead (429) when `take` says no. Rows written in a change's own transaction
 * never go through here: a committed change always keeps its row.
 */
export class AuditBudget {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

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
}

/**
 * The defaults (docs/limits.md "Audit trail"): a burst of 30 dashboard writes, then one every 2 s, per actor; at most
 * 10,000 actors remembered per process (the least recently active forgotten first, which can only give one a fresh
 * burst).
 */
export const AUDIT_BUDGET = { capacity: 30, perMinute: 30, actors: 10_000 } as const;
