/**
 * The write positions the gateways share for read-your-writes (write-positions.ts), on the real Redis: the later
 * position is kept whatever the order of the notes, each key expires with its window, and a Redis that is away
 * rejects at once (the reader then reads on the primary).
 */
import { eventually } from "@mdp/core/testing";
import {
  closeRedis,
  createRedis,
  RedisWritePositions,
  whenReady,
  writePositionKey,
  type RedisConnection,
} from "../src";
import { freePort, uniqueName } from "../../../test/support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

describe("RedisWritePositions", () => {
  let redis: RedisConnection;
  let positions: RedisWritePositions;
  const prefix = `{${uniqueName("write-positions")}}`;

  beforeAll(async () => {
    redis = createRedis(REDIS_URL, "producer", { connectionName: "mdp-write-positions-test" });
    await whenReady(redis);
    positions = new RedisWritePositions(redis, prefix);
  });

  afterAll(async () => {
    await closeRedis(redis);
  });

  it("keeps the later position of an actor, whichever is noted last, and nothing for another", async () => {
    const actor = "urn:li:corpuser:later";
    await positions.note(actor, "0/9FFFFFF", 10_000);
    await positions.note(actor, "1/1000", 10_000); // later in the high half
    await positions.note(actor, "0/FFFFFFFF", 10_000); // earlier, noted late
    expect(await positions.get(actor)).toBe("1/1000");
    await positions.note(actor, "1/10000", 10_000);
    expect(await positions.get(actor)).toBe("1/10000");
    expect(await positions.get("urn:li:corpuser:nobody")).toBeUndefined();
  });

  it("one key per actor, without the prefix's hash tag, expiring with the window", async () => {
    const actor = "urn:li:corpuser:expiring";
    await positions.note(actor, "2/A0", 300);
    const key = writePositionKey(prefix, actor);
    expect(key).not.toMatch(/[{}]/);
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    await eventually("the position to expire", async () => (await positions.get(actor)) === undefined);
  });

  it("an earlier position noted after a later one leaves the later one's expiry as it was", async () => {
    // The "unknown" position (a write whose position could not be read) must not be kept alive by a steady writer.
    const actor = "urn:li:corpuser:steady";
    const key = writePositionKey(prefix, actor);
    await positions.note(actor, "FFFFFFFF/FFFFFFFF", 300);
    await positions.note(actor, "3/10", 60_000);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(300);
    await eventually("the unknown position to expire", async () => (await positions.get(actor)) === undefined);
  });

  it("rejects at once while Redis is away, so a reader can go to the primary", async () => {
    const away = createRedis(`redis://127.0.0.1:${await freePort()}`, "producer", {
      maxRetriesPerRequest: 0,
      connectionName: "mdp-write-positions-away",
    });
    away.on("error", () => undefined);
    try {
      const store = new RedisWritePositions(away, prefix);
      const started = Date.now();
      await expect(store.get("urn:li:corpuser:any")).rejects.toThrow();
      await expect(store.note("urn:li:corpuser:any", "0/1", 1000)).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      away.disconnect(); // not closeRedis: it would give the refused connection 3 s to come back
    }
  });
});
