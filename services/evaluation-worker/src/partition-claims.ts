import { every, type Logger, type PeriodicLoop } from "@mdp/core";
import {
  advancePartitions,
  claimPartitions,
  ensurePartitionLayout,
  inTransaction,
  partitionsEventsAfter,
  releasePartitions,
  repartitionBacklog,
  type AspectChangeFilter,
  type HeldPartition,
  type PartitionRead,
} from "@mdp/db";
import type { Pool } from "pg";
import { setPartitionsHeld } from "./evaluation-metrics";
import { ON_CHANGE_CONSUMER } from "./on-change-settings";

/**
 * The on-change partitions one worker holds under their leases (platform-event-partition.repository.ts). A pass
 * claims at its start (renewals, this worker's fair share, extras released); between passes, and during a long one, a
 * keeper renews and takes lapsed partitions every fifth of a lease, releasing nothing. So a worker busy in a pass
 * longer than its lease keeps what it holds, and a dead worker's partitions go to a live one within the lease and a
 * fifth, pass or no pass. A pass that has run past `stuckAfterMs` is taken for hung: the keeper renews nothing while
 * it goes on, so its partitions lapse to the other workers (and its commit, if it ever comes, finds them gone).
 */
export class PartitionClaims {
  private readonly held = new Map<number, HeldPartition>();
  private claimedAt = 0;
  private laidOut = false;
  private claiming: Promise<void> | null = null;
  private keeper: PeriodicLoop | undefined;
  /** since when the pass in flight runs */
  private passSince: number | undefined;
  /** moved by release: a claim that was waiting when it came claims nothing */
  private generation = 0;

  constructor(
    private readonly pool: Pool,
    private readonly holder: string,
    private readonly settings: { partitions: number; leaseMs: number; stuckAfterMs: number },
    /** called for each partition new to this worker, before its first pass (its owners' backlogs to drain) */
    private readonly taken: (partition: number) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** The partitions held as of the last claim, each with its position (moved by the passes). */
  values(): HeldPartition[] {
    return [...this.held.values()];
  }

  has(partition: number): boolean {
    return this.held.has(partition);
  }

  ids(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** A partition another worker took over (found by a pass): forgotten until a claim gets it back. */
  lost(partition: number): void {
    this.held.delete(partition);
    setPartitionsHeld(this.held.size);
  }

  /**
   * Each held partition's next events (up to `batchSize`, from its position), all read in one scan of the stream
   * (partitionsEventsAfter; a window of four batches a partition); `only` keeps what the pass acts on. Those that read
   * nothing to act on are moved on at once, together, in one statement rather than a transaction each; one found
   * taken over meanwhile has no read (forgotten as lost: its new holder reads the same events again).
   */
  async readNext(
    batchSize: number,
    end: string,
    only: AspectChangeFilter,
  ): Promise<Array<{ held: HeldPartition; read?: PartitionRead }>> {
    const held = this.values();
    const window = batchSize * (held[0]?.partitions ?? this.settings.partitions) * 4;
    const reads = await partitionsEventsAfter(this.pool, held, batchSize, window, end, only);
    const quiet = held.flatMap((h, i) => {
      const { events, upTo } = reads[i]!;
      return events.length === 0 && upTo !== h.seq ? [{ ...h, to: upTo }] : [];
    });
    const moved = await advancePartitions(this.pool, ON_CHANGE_CONSUMER, this.holder, quiet, this.settings.leaseMs);
    for (const move of quiet) {
      const mine = this.held.get(move.partition);
      if (!moved.has(move.partition)) this.lost(move.partition);
      else if (mine && BigInt(move.to) > BigInt(mine.seq)) mine.seq = move.to; // never back past a claim's
    }
    return held.map((h, i) =>
      quiet.some((q) => q.partition === h.partition) && !moved.has(h.partition)
        ? { held: h }
        : { held: h, read: reads[i]! },
    );
  }

  /** A pass's claim: when none is held or the last pass's claim is a fifth of a lease old, or `now`. */
  async claimForPass(now = false): Promise<void> {
    if (!now && this.held.size > 0 && Date.now() - this.claimedAt < this.settings.leaseMs / 5) return;
    const claimedAt = Date.now();
    await this.claim(true);
    this.claimedAt = claimedAt;
  }

  /** Runs a pass, timed for the keeper (see the class). */
  async during<T>(pass: () => Promise<T>): Promise<T> {
    this.passSince = Date.now();
    try {
      return await pass();
    } finally {
      this.passSince = undefined;
    }
  }

  /** Starts the keeper (the worker's loop does; stopped by release). */
  keep(): void {
    this.keeper ??= every(
      "on-change partition leases",
      this.settings.leaseMs / 5,
      async () => {
        if (this.passSince !== undefined && Date.now() - this.passSince > this.settings.stuckAfterMs) {
          return { renewed: 0, passRunningMs: Date.now() - this.passSince };
        }
        if (!this.claiming) await this.claim(false);
      },
      { logger: this.logger },
    );
  }

  /** Stops the keeper and gives up every partition (and the membership) for the other workers to take at once. */
  async release(): Promise<void> {
    this.generation++;
    await this.keeper?.stop();
    this.keeper = undefined;
    await this.claiming?.catch(() => undefined);
    this.held.clear();
    setPartitionsHeld(0);
    await releasePartitions(this.pool, ON_CHANGE_CONSUMER, this.holder);
  }

  /** One claim round at a time: a keeper's tick waits for none, a pass's waits for the one in flight and claims again. */
  private async claim(releaseExtra: boolean): Promise<void> {
    const generation = this.generation;
    while (this.claiming) await this.claiming.catch(() => undefined);
    if (generation !== this.generation) return;
    this.claiming = this.claimRound(releaseExtra);
    try {
      await this.claiming;
    } finally {
      this.claiming = null;
    }
  }

  private async claimRound(releaseExtra: boolean): Promise<void> {
    const { partitions, leaseMs } = this.settings;
    if (!this.laidOut) {
      await inTransaction(this.pool, (client) =>
        ensurePartitionLayout(client, ON_CHANGE_CONSUMER, partitions, (c) => repartitionBacklog(c, partitions)),
      );
      this.laidOut = true;
    }
    const rows = await inTransaction(this.pool, (client) =>
      claimPartitions(client, ON_CHANGE_CONSUMER, this.holder, leaseMs, { releaseExtra }),
    );
    const now = new Set(rows.map((row) => row.partition));
    for (const partition of this.held.keys()) if (!now.has(partition)) this.held.delete(partition);
    const taken: number[] = [];
    for (const row of rows) {
      const mine = this.held.get(row.partition);
      if (!mine) {
        this.held.set(row.partition, row);
        taken.push(row.partition);
        continue;
      }
      if (mine.partitions !== row.partitions) {
        // Laid out again: the new layout's position, never the old one's (a pass of the old layout commits nothing).
        this.held.set(row.partition, row);
        taken.push(row.partition);
        continue;
      }
      // The same object a pass in flight moves: never back past what it (or another worker meanwhile) committed.
      if (BigInt(row.seq) > BigInt(mine.seq)) mine.seq = row.seq;
    }
    setPartitionsHeld(this.held.size);
    for (const partition of taken) await this.taken(partition);
  }
}
