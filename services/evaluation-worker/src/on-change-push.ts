import { holdsPartitions, inTransaction, removeFromBacklog, type BacklogEntry, type HeldPartition } from "@mdp/db";
import type { EvaluateDeps } from "./evaluation-deps";
import { ON_CHANGE_CONSUMER } from "./on-change-settings";
import type { PushItem } from "./results.pusher";

/** The partitions a push evaluated, of the layout they were held in. */
export interface PushFence {
  partitions: readonly number[];
  layout: number;
}

/** A partition (of a pass or of a push) another worker had taken over: what was done of it committed nothing. */
export class LostPartition extends Error {}

/**
 * Pushes an owner's results on change in a transaction of their own; `backlog`: the entries they leave, in the same
 * one. It commits only while `holder` still holds the partitions evaluated: one taken over meanwhile has a new holder
 * evaluating its changes again, whose results must not be overwritten by these older ones (LostPartition).
 */
export async function pushFenced(
  deps: Pick<EvaluateDeps, "db" | "pusher">,
  holder: string,
  items: readonly PushItem[],
  backlog: ReadonlyArray<BacklogEntry & { partition: number }>,
  fence: PushFence,
): Promise<number> {
  if (items.length === 0 && backlog.length === 0) return 0;
  return inTransaction(deps.db.pool, async (client) => {
    const pushed = await deps.pusher.push(client, items);
    if (backlog.length > 0) await removeFromBacklog(client, backlog);
    if (!(await holdsPartitions(client, ON_CHANGE_CONSUMER, holder, fence))) {
      throw new LostPartition(`partitions ${fence.partitions.join(", ")} were taken over before the push committed`);
    }
    return pushed;
  });
}

/** The fence of a backlog batch of these partitions: all held, in one layout, or LostPartition. */
export function fenceOf(held: readonly HeldPartition[], partitions: readonly number[]): PushFence {
  const layouts = new Map(held.map((h) => [h.partition, h.partitions]));
  const layout = layouts.get(partitions[0]!);
  if (layout === undefined || partitions.some((p) => layouts.get(p) !== layout)) {
    throw new LostPartition(`partitions ${partitions.join(", ")} are no longer all held`);
  }
  return { partitions: [...new Set(partitions)], layout };
}
