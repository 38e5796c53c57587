import { every, type Logger, type PeriodicLoop } from "@mdp/core";
import { recordAccessTokenUses, type PrismaClient } from "@mdp/db";

/**
 * Keeps access_token.last_used_at without a write per request: uses are collected in memory and written in one
 * statement every few seconds (and on shutdown). last_used_at is therefore at most FLUSH_INTERVAL_MS stale.
 */
export class LastUsedRecorder {
  static readonly FLUSH_INTERVAL_MS = 5_000;
  /** token id → epoch ms of its latest use (a number: no Date per request) */
  private pending = new Map<string, number>();
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly logger: Logger,
  ) {
    this.loop = every("last-used-flush", LastUsedRecorder.FLUSH_INTERVAL_MS, () => this.flush(), { logger });
  }

  record(tokenId: string, at = Date.now()): void {
    this.pending.set(tokenId, at);
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    const times = ids.map((id) => new Date(batch.get(id)!));
    try {
      // Several replicas flush independently; the newest use is kept.
      await recordAccessTokenUses(this.prisma, ids, times);
    } catch (error) {
      this.logger.warn({ err: error, tokens: ids.length }, "could not record last use of access tokens");
    }
  }

  async stop(): Promise<void> {
    await this.loop.stop(); // a flush in flight ends first
    await this.flush();
  }
}
