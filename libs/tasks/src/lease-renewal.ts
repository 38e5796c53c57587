import { every, type Logger } from "@mdp/core";
import type { TaskRepository } from "@mdp/db";
import { cancellationReason } from "./cancellation";
import type { Lease } from "./lease";

/** How an attempt that failed ends, as failAttempt computed it. */
export interface Ending {
  lease: Lease;
  final: boolean;
  reason: string;
}

/**
 * The leases one worker process renews for TaskLifecycle: the attempts it runs, the endings it could not write yet,
 * and the token-less rows its jobs hold.
 */
export class LeaseRenewal {
  /** the attempts this process is running, by lease token: the only leases it renews */
  readonly running = new Map<string, { cancelSeen: boolean }>();
  /** endings its attempts could not write (PostgreSQL unreachable), by lease token: written at the next renewals */
  readonly unrecorded = new Map<string, Ending>();
  /** token-less rows (synchronous evaluations) its jobs are working on, with how many jobs hold each */
  private readonly heldRows = new Map<string, number>();

  constructor(
    private readonly rows: TaskRepository,
    private readonly logger: Logger,
    private readonly owner: string,
    private readonly leaseMs: number,
  ) {}

  /**
   * Writes an attempt's ending, if the attempt still holds the task: cancelled (saying how far it got) when a cancel
   * was requested, else failed or waiting for the next attempt.
   */
  settle({ lease, final, reason }: Ending): Promise<void> {
    return this.rows.settleAttempt(lease, final, reason, cancellationReason);
  }

  /**
   * Rows without a lease token that a job of this process is working on (synchronous evaluations' rows, which its
   * startedCte or claimForPush made active under this process): renewed while the job runs, until `release()`.
   */
  holdRows(taskIds: readonly string[]): { release(): void } {
    for (const id of taskIds) this.heldRows.set(id, (this.heldRows.get(id) ?? 0) + 1);
    return {
      release: () => {
        for (const id of taskIds) {
          const n = (this.heldRows.get(id) ?? 1) - 1;
          if (n > 0) this.heldRows.set(id, n);
          else this.heldRows.delete(id);
        }
      },
    };
  }

  /**
   * One renewal: (1) endings attempts could not write (PostgreSQL was unreachable) are written, fenced by their lease
   * token; (2) the leases of the attempts this process is running, and only those, are renewed in one statement, so an
   * attempt that died in this process leaves a lease that lapses, which the next claim takes over; (3) an attempt
   * still running a renewal after the one that found its task asked to stop has not reached a checkpoint in all that
   * time (hung, or stuck in one step): it is ended cancelled here, its lease token cleared, so whatever it writes
   * later changes nothing. Returns how many leases it renewed.
   */
  async renewLeases(): Promise<number> {
    for (const [token, ending] of [...this.unrecorded]) {
      const written = await this.settle(ending).then(
        () => true,
        (error: unknown) => {
          this.logger.warn({ taskId: ending.lease.taskId, err: error }, "could not record a failed attempt yet");
          return false;
        },
      );
      if (!written) break; // PostgreSQL still away: the rest wait for the next renewal, the live leases are renewed below
      this.unrecorded.delete(token);
    }
    const tokens = [...this.running.keys()];
    const rows = [...this.heldRows.keys()];
    if (tokens.length === 0 && rows.length === 0) return 0;
    const renewed = await this.rows.renew(this.owner, this.leaseMs, tokens, rows);
    for (const row of renewed) {
      const attempt = row.token === null ? undefined : this.running.get(row.token);
      if (!attempt || !row.cancelRequested) continue;
      if (!attempt.cancelSeen) {
        attempt.cancelSeen = true; // it has until the next renewal to stop at a checkpoint
        continue;
      }
      await this.cancelStuck(row.id, row.token!);
    }
    return renewed.length;
  }

  /** Ends as cancelled a task whose running attempt did not stop at a checkpoint when asked; fences that attempt. */
  private async cancelStuck(taskId: string, token: string): Promise<void> {
    this.running.delete(token);
    await this.rows.cancelStuck({ taskId, token }, cancellationReason);
    this.logger.warn({ taskId }, "a cancelled task's attempt did not stop at a checkpoint; ended it as cancelled");
  }

  /**
   * Renews this process's leases every third of the lease, until stopped. A process that cannot (dead, hung, cut
   * off from PostgreSQL) lets them lapse: its tasks read as waiting, and are claimed again.
   */
  keepLeases(): { stop(): void } {
    // One renewal at a time (every's runs never overlap): a renewal still waiting on PostgreSQL skips the next ticks.
    const loop = every(
      "lease-renewal",
      Math.max(50, Math.floor(this.leaseMs / 3)),
      () =>
        this.renewLeases().then(
          (renewed) => (renewed > 0 ? { renewed } : undefined),
          (error: unknown) => {
            this.logger.warn({ err: error }, "could not renew task leases");
            return undefined;
          },
        ),
      { logger: this.logger },
    );
    return { stop: () => void loop.stop() };
  }
}
