import { pruneInBatches, SYSTEM_ACTOR_URN, type Logger } from "@mdp/core";
import { writeTokenExpiryNotices, type Database } from "@mdp/db";
import type { Chore } from "@mdp/queues";

/** How often the gateways look for tokens nearing expiry: a notice is at most this late. */
export const EXPIRY_NOTICE_EVERY_MS = 600_000;
/** Tokens told per statement: a backlog (the first run on a large deployment) is told in several. */
const NOTICE_BATCH = 1000;
/** A firing's time budget: what is left is told at the next. */
const NOTICE_BUDGET_MS = 20_000;

/**
 * The `notify-expiring-tokens` chore on `gateway-chores` (one gateway per firing): ACCESS_TOKEN EXPIRING_SOON platform
 * events 7 days and 1 day before a token's expiry (docs/events.md). Each event is written with its durable marker in
 * one statement (writeTokenExpiryNotices), so two firings racing, or a gateway restarting mid-firing, never tell a
 * token twice at one threshold.
 */
export function tokenExpiryNoticeChore(db: Pick<Database, "pool">, logger: Logger): Chore<"gatewayChores"> {
  return {
    name: "notify-expiring-tokens",
    everyMs: EXPIRY_NOTICE_EVERY_MS,
    run: async () => {
      const notified = await pruneInBatches((batch) => writeTokenExpiryNotices(db.pool, SYSTEM_ACTOR_URN, batch), {
        budgetMs: NOTICE_BUDGET_MS,
        batch: NOTICE_BATCH,
      });
      if (notified > 0) logger.info({ notified }, "told of access tokens nearing expiry");
      return { notified };
    },
  };
}
