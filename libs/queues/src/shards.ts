import calculateSlot from "cluster-key-slot";
import { QUEUE_NAMES, type QueueKey } from "./names";

/**
 * The queues split into QUEUE_SHARDS shards: the ones whose traffic grows with the requests (every evaluate and
 * runTest is a job, and its reply a message). The others carry a few jobs a minute (chores, schedule firings, sync)
 * or are bounded by PostgreSQL long before Redis (truncations), and stay one queue each.
 */
export const SHARDED_QUEUES: ReadonlySet<QueueKey> = new Set<QueueKey>(["evaluate"]);

const SLOTS = 16_384;

/** how many shards `key` has under the QUEUE_SHARDS setting (1 for a queue that is never split) */
export function shardCount(key: QueueKey, shards: number): number {
  return SHARDED_QUEUES.has(key) ? Math.max(1, Math.floor(shards)) : 1;
}

/**
 * The BullMQ prefix of each shard. Shard 0 keeps QUEUE_PREFIX itself, so one shard is the queue as it always was
 * (its jobs, its job schedulers, its dashboard). The slot space is cut into `shards` equal arcs; shard 0's slot falls
 * in one, and shard i > 0 takes the i-th arc after it: its prefix swaps the {hash tag} `t` for `t~i.k`, `k` the first
 * number that puts the tag's slot in the middle half of that arc. A cluster of as many masters as shards, each
 * holding an equal run of slots (what `redis-cli --cluster create` makes), then has one shard on each master; the
 * prefixes follow from QUEUE_PREFIX and QUEUE_SHARDS alone, the same in every process whatever the cluster's layout.
 * An untagged prefix (one server, where slots mean nothing) gets `~i`.
 */
export function shardPrefixes(prefix: string, shards: number): string[] {
  const count = Math.max(1, Math.floor(shards));
  const open = prefix.indexOf("{");
  const close = open < 0 ? -1 : prefix.indexOf("}", open + 1);
  if (close <= open + 1) return Array.from({ length: count }, (_, i) => (i === 0 ? prefix : `${prefix}~${i}`));
  const tag = prefix.slice(open + 1, close);
  const withTag = (t: string) => `${prefix.slice(0, open)}{${t}}${prefix.slice(close + 1)}`;
  const arc = SLOTS / count;
  const firstArc = Math.floor(calculateSlot(`{${tag}}`) / arc);
  return Array.from({ length: count }, (_, i) => {
    if (i === 0) return prefix;
    const start = ((firstArc + i) % count) * arc;
    for (let k = 0; ; k++) {
      const candidate = `${tag}~${i}.${k}`;
      const slot = calculateSlot(`{${candidate}}`);
      if (slot >= start + arc / 4 && slot < start + (3 * arc) / 4) return withTag(candidate);
    }
  });
}

/**
 * The shard a job goes to, from its id alone (FNV-1a): a task's job always lands on one shard, so BullMQ's job id
 * still deduplicates, and whoever knows the id (the gateway asking a job's state, the reply it waits for) finds it.
 */
export function shardOf(jobId: string, shards: number): number {
  if (shards <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    hash ^= jobId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/**
 * What the queue dashboard calls a shard: the queue's own name for shard 0 (one shard: as it always was), `name-i`
 * for the others (Bull Board names queues by name, and every shard has the same BullMQ name).
 */
export function shardDisplayName(key: QueueKey, shard: number): string {
  return shard === 0 ? QUEUE_NAMES[key] : `${QUEUE_NAMES[key]}-${shard}`;
}
