import calculateSlot from "cluster-key-slot";
import { shardCount, shardOf, shardPrefixes } from "./shards";

/** the master holding `slot` in a cluster of `masters` equal runs of slots, as `redis-cli --cluster create` makes */
const masterOf = (slot: number, masters: number) => Math.floor(slot / Math.ceil(16_384 / masters));

describe("queue shards", () => {
  it("keeps QUEUE_PREFIX as shard 0, so one shard is the queue as it was", () => {
    expect(shardPrefixes("{mdp}", 1)).toEqual(["{mdp}"]);
    expect(shardPrefixes("{mdp}", 3)[0]).toBe("{mdp}");
    expect(shardPrefixes("mdp", 3)).toEqual(["mdp", "mdp~1", "mdp~2"]);
  });

  it.each(["{mdp}", "{prod-mdp}", "{test-1f2e}", "a{x}b"])(
    "puts the shards of %s on as many masters as shards, each with its own hash tag",
    (prefix) => {
      for (const shards of [2, 3, 4]) {
        const prefixes = shardPrefixes(prefix, shards);
        expect(prefixes).toEqual(shardPrefixes(prefix, shards)); // the same in every process
        const masters = prefixes.map((p) => masterOf(calculateSlot(p), shards));
        expect(new Set(masters).size).toBe(shards);
      }
    },
  );

  it("routes a job id to one shard, and ids evenly over the shards", () => {
    expect(shardOf("task-1", 3)).toBe(shardOf("task-1", 3));
    expect(shardOf("anything", 1)).toBe(0);
    const counts = [0, 0, 0];
    for (let i = 0; i < 3_000; i++) counts[shardOf(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, 3)]!++;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it("splits only the evaluate queue", () => {
    expect(shardCount("evaluate", 3)).toBe(3);
    expect(shardCount("truncate", 3)).toBe(1);
  });
});
