import { AppError } from "@mdp/core";
import type { OnChangeSettings } from "./on-change-settings";

/** One owner's evaluation on change in one partition: at most one piece of its work runs at a time. */
export interface OwnerLane {
  partition: number;
  ownerUrn: string;
  /** work of this owner in flight (an evaluation carried past a pass, or its backlog's) */
  busy: boolean;
  /** entries wait in on_change_backlog: this owner's new changes queue behind them (set through markBacklog) */
  backlog: boolean;
  /** how many times it was marked: a drain clears the flag only if none came since its read of the backlog began */
  marks: number;
  /** after a failed backlog batch (the database away), or its budget spent: no backlog batch before */
  retryAt: number;
  /** its owner's evaluation-time budget is spent until then: its changes are carried over */
  budgetAt: number;
}

/** The lane has entries in the backlog (a pass carried some, a batch of them failed, a partition came with them). */
export function markBacklog(lane: OwnerLane): void {
  lane.backlog = true;
  lane.marks++;
}

/** Per owner and partition, its lane; per owner, its turn at this worker's threads (evaluation on change). */
export class OwnerLanes {
  private readonly lanes = new Map<string, OwnerLane>();
  /** the owners whose backlogs this worker is draining (one drain per owner, over its partitions) */
  readonly draining = new Set<string>();
  /** per owner, the end of its last backlog batch queued (ownerTurn) */
  private readonly turns = new Map<string, Promise<void>>();

  constructor(private readonly settings: Pick<OnChangeSettings, "rateLimits">) {}

  values(): IterableIterator<OwnerLane> {
    return this.lanes.values();
  }

  /**
   * Runs `fn` when this owner's evaluations on change before it (of any partition: a pass's, a backlog batch) have
   * ended: an owner's evaluation on change takes one thread of this worker at a time, however many partitions its
   * changes are in, so one owner's tests never take the threads (or the cores) other owners' are evaluated on; what
   * waits past the pass's budget is carried over.
   */
  async ownerTurn<T>(ownerUrn: string, fn: () => Promise<T>): Promise<T> {
    const before = this.turns.get(ownerUrn);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.turns.set(ownerUrn, mine);
    try {
      await before;
      return await fn();
    } finally {
      release();
      if (this.turns.get(ownerUrn) === mine) this.turns.delete(ownerUrn);
    }
  }

  /**
   * Whether the owner has spent its evaluation-time budget (RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE): its work then
   * waits in its backlog, not run, until the budget refills (the lane retries then), so one owner's tests take at
   * most its budget of the threads, whatever rate of changes they select.
   */
  async budgetSpent(lane: OwnerLane, alike: readonly OwnerLane[] = []): Promise<boolean> {
    if (Date.now() < lane.budgetAt) return true;
    try {
      await this.settings.rateLimits?.refuseIfSpent({ urn: lane.ownerUrn }, "evaluationTime");
      return false;
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "TOO_MANY_REQUESTS") throw error;
      const seconds = Number((error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds ?? 1);
      // The budget is the owner's: its other lanes (`alike`) wait as long.
      for (const l of [lane, ...alike]) {
        l.budgetAt = Date.now() + seconds * 1000;
        l.retryAt = l.budgetAt;
      }
      return true;
    }
  }

  /** The owner's lanes whose backlog may be drained now: in a partition held, not busy, not waiting for a retry. */
  drainable(ownerUrn: string, held: (partition: number) => boolean): OwnerLane[] {
    const now = Date.now();
    return [...this.lanes.values()].filter(
      (l) => l.ownerUrn === ownerUrn && l.backlog && !l.busy && now >= l.retryAt && held(l.partition),
    );
  }

  lane(partition: number, ownerUrn: string): OwnerLane {
    const key = `${partition}\n${ownerUrn}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { partition, ownerUrn, busy: false, backlog: false, marks: 0, retryAt: 0, budgetAt: 0 };
      this.lanes.set(key, lane);
    }
    return lane;
  }
}
