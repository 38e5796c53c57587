import { pruneInBatches } from "@mdp/core";
import { prunePlatformEvents } from "@mdp/db";
import type { EvaluateDeps } from "./evaluation-deps";

/** The outbox's retention: events older than PLATFORM_EVENT_RETENTION_DAYS that every consumer has read. */
export const EVENT_PRUNE_EVERY_MS = 60_000;

export async function prunePlatformEventsFully(
  deps: Pick<EvaluateDeps, "db">,
  retentionDays: number,
  budgetMs = 20_000,
): Promise<number> {
  return pruneInBatches((batch) => prunePlatformEvents(deps.db.pool, retentionDays, batch), {
    budgetMs,
    batch: 10_000,
  });
}
