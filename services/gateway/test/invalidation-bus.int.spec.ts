/**
 * The invalidation channel's log on real Redis, as an operator reads it at first start: the channel coming up the first
 * time is no recovery ("live", not "live again"); a recovery after a silence says "again".
 */
import { randomUUID } from "node:crypto";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis } from "@mdp/queues";
import { InvalidationBus } from "../src/events/invalidation-bus";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

it("says the channel is live at start, and 'live again' only after it went silent", async () => {
  const lines: Array<{ msg: string }> = [];
  const logger = createLogger("gateway-test", "info", { write: (line: string) => void lines.push(JSON.parse(line)) });
  const [publisher, subscriber] = [createRedis(REDIS_URL, "producer"), createRedis(REDIS_URL, "subscriber")];
  const channel = `test-invalidation-${randomUUID()}`;
  const bus = new InvalidationBus(publisher, subscriber, channel, logger);
  try {
    await bus.start();
    await eventually("the channel is live", () => bus.isLive());
    const said = () => lines.map((l) => l.msg).filter((msg) => msg.startsWith("invalidation channel"));
    expect(said()).toEqual(["invalidation channel live: caches in use"]);

    // Its own heartbeats stop coming back (unsubscribed): silent, then live again once they return.
    await subscriber.unsubscribe(channel);
    await eventually("the channel is silent", () => !bus.isLive(), { timeoutMs: 5_000 });
    await subscriber.subscribe(channel);
    await eventually("the channel is live again", () => bus.isLive(), { timeoutMs: 5_000 });
    expect(said()).toEqual([
      "invalidation channel live: caches in use",
      "invalidation channel silent: caches bypassed, every check reads PostgreSQL",
      "invalidation channel live again: caches in use",
    ]);
  } finally {
    await bus.stop();
    await Promise.all([closeRedis(publisher), closeRedis(subscriber)]);
  }
});
