import { handBack } from "./job-control";
import type { JobHandler } from "./worker";
import type { QueueKey } from "./names";

/**
 * Work in flight in this process, counted per key (an actor, a subscription's owner): the one bookkeeping behind every
 * per-key cap, so that one key's backlog never takes all of a process's slots.
 */
export class KeyedSlots {
  private total = 0;
  private readonly heldBy = new Map<string, number>();

  /** Slots held now, by every key together. */
  get held(): number {
    return this.total;
  }

  /** Slots `key` holds now. */
  heldFor(key: string): number {
    return this.heldBy.get(key) ?? 0;
  }

  /** The keys holding at least `limit` slots. */
  atLeast(limit: number): string[] {
    return [...this.heldBy].filter(([, n]) => n >= limit).map(([key]) => key);
  }

  /** Takes one slot, counted for each of `keys` (one work item may act for several); returns its release, idempotent. */
  take(keys: readonly string[]): () => void {
    const unique = [...new Set(keys)];
    this.total++;
    for (const key of unique) this.heldBy.set(key, this.heldFor(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      for (const key of unique) {
        const left = this.heldFor(key) - 1;
        if (left <= 0) this.heldBy.delete(key);
        else this.heldBy.set(key, left);
      }
    };
  }
}

export interface PerKeyOptions {
  /** the slots counted (shared with whatever else reads them) */
  slots: KeyedSlots;
  /** how long a job with no room waits in the queue before it is fetched again (ms): bounds how often it bounces */
  handBackMs: number;
}

/**
 * `handler`, with at most `limit` jobs in flight in this process per key: a job none of whose keys (`keyOf`) is below
 * the limit is handed back to its queue (handBack: no attempt spent) rather than run. `limit` may depend on how many
 * slots are held now (the evaluation worker's last free slot goes only to a key holding none). A job acting for
 * several keys runs when one of them has room: it serves that one.
 */
export function perKeyConcurrency<K extends QueueKey>(
  handler: JobHandler<K>,
  keyOf: (payload: Parameters<JobHandler<K>>[0]) => readonly string[],
  limit: number | ((held: number) => number),
  { slots, handBackMs }: PerKeyOptions,
): JobHandler<K> {
  return async (payload, job, token) => {
    const keys = keyOf(payload);
    const cap = typeof limit === "number" ? limit : limit(slots.held);
    if (keys.length > 0 && keys.every((key) => slots.heldFor(key) >= cap)) return handBack(job, token, handBackMs);
    const release = slots.take(keys);
    try {
      return await handler(payload, job, token);
    } finally {
      release();
    }
  };
}
