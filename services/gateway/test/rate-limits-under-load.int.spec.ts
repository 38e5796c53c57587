/**
 * Per-actor rate limits (Redis) while Redis stalls, and under concurrent requests: one Redis round trip per actor and
 * turn (docs/decisions/0008-rate-limit-checks-batched-per-turn.md).
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { bearer, createToken, grant, startGateway } from "./support/gateway-harness";
import { Redis } from "ioredis";
import { startPrivateRedis } from "../../../test/support/private-redis";
import { RateLimits } from "../src/shared/rate-limits";
import { ALICE, LIMITS, mint } from "./support/rate-limits";

describe("rate limits while Redis stalls", () => {
  it("fall back to each replica's share, counted in memory, and never hold the request", async () => {
    const redis = await startPrivateRedis();
    const admin = new Redis(redis.url);
    const h = await startGateway({ ...LIMITS, REDIS_URL: redis.url, RATE_LIMIT_REPLICAS: "1" });
    try {
      await grant(h, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
      const token = (await createToken(h, ALICE)).token;
      await admin.call("CLIENT", "PAUSE", "10000", "WRITE"); // holds the limiter's script (EVALSHA is a write)
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const startedAt = Date.now();
        statuses.push((await mint(h, bearer(token))).status);
        expect(Date.now() - startedAt).toBeLessThan(1000);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await admin.call("CLIENT", "UNPAUSE");
      await admin.quit();
      await h.close();
      await redis.stop();
    }
  });
});

describe("rate limits under concurrent requests (one Redis round trip per actor and turn)", () => {
  const config = (replicas: number) => ({
    QUEUE_PREFIX: "{rl-batch}",
    RATE_LIMIT_REPLICAS: replicas,
    RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: 0,
    RATE_LIMIT_EVALUATIONS_PER_MINUTE: 30,
    RATE_LIMIT_TEST_RUNS_PER_MINUTE: 0,
    RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: 1,
  });
  const replica = async (url: string, replicas = 2) => {
    const connection = RateLimits.connect({ REDIS_URL: url }, createLogger("rate-limits-test", "silent"));
    await eventually("the limiter's Redis connection is ready", () => connection.status === "ready");
    return new RateLimits(connection, config(replicas));
  };
  const scriptCalls = async (admin: Redis) => {
    const stats = (await admin.info("commandstats")).split("\r\n");
    const calls = (command: string) =>
      Number(stats.find((line) => line.startsWith(`cmdstat_${command}:`))?.match(/calls=(\d+)/)?.[1] ?? 0);
    return calls("evalsha") + calls("eval");
  };
  const settle = (checks: Array<Promise<void>>) =>
    Promise.allSettled(checks).then((all) => all.map((r) => (r.status === "fulfilled" ? "ok" : "refused")));

  it("admits exactly the limit across two replicas, with one script call per replica for an actor's checks of one turn", async () => {
    const redis = await startPrivateRedis();
    const admin = new Redis(redis.url);
    const [a, b] = await Promise.all([replica(redis.url), replica(redis.url)]);
    try {
      const dave = { urn: "urn:li:corpuser:dave" };
      const before = await scriptCalls(admin);
      // 25 requests of 1 entity on each replica at once: 50 entities against a limit of 30.
      const outcomes = await settle([
        ...Array.from({ length: 25 }, () => a.consume(dave, "evaluations")),
        ...Array.from({ length: 25 }, () => b.consume(dave, "evaluations")),
      ]);
      expect(outcomes.filter((o) => o === "ok")).toHaveLength(30);
      // In order within each replica's batch: its first requests pass, those past the limit are refused.
      for (const half of [outcomes.slice(0, 25), outcomes.slice(25)]) {
        expect(half).toEqual([...half].sort((x, y) => (x === y ? 0 : x === "ok" ? -1 : 1)));
      }
      expect(await scriptCalls(admin)).toBe(before + 2);
      // The counter is shared and exact: the next one, on either replica, is refused.
      await expect(a.consume(dave, "evaluations")).rejects.toMatchObject({ code: "TOO_MANY_REQUESTS" });
      await expect(b.consume(dave, "evaluations")).rejects.toMatchObject({ code: "TOO_MANY_REQUESTS" });

      // Batches of several entities are decided request by request, as if sent one after another: 10 + 15 + 10
      // against 30 admits the first two and refuses the third.
      const erin = { urn: "urn:li:corpuser:erin" };
      expect(
        await settle([
          a.consume(erin, "evaluations", 10),
          a.consume(erin, "evaluations", 15),
          a.consume(erin, "evaluations", 10),
        ]),
      ).toEqual(["ok", "ok", "refused"]);
      // ...and another actor's checks of the same turn are another batch, counted apart.
      const frank = { urn: "urn:li:corpuser:frank" };
      expect(await settle([a.consume(frank, "evaluations", 30), a.consume(erin, "evaluations", 1)])).toEqual([
        "ok",
        "refused",
      ]);

      // Evaluation time, charged after the work: one turn's charges are one call, and they add up exactly.
      const gail = { urn: "urn:li:corpuser:gail" };
      const beforeCharges = await scriptCalls(admin);
      await Promise.all(Array.from({ length: 9 }, () => b.charge(gail, "evaluationTime", 99.5)));
      expect(await scriptCalls(admin)).toBe(beforeCharges + 1);
      await expect(a.refuseIfSpent(gail, "evaluationTime")).resolves.toBeUndefined(); // 900 ms (each rounded up) of 1000
      await b.charge(gail, "evaluationTime", 100);
      await expect(a.refuseIfSpent(gail, "evaluationTime")).rejects.toMatchObject({ code: "TOO_MANY_REQUESTS" });
    } finally {
      await Promise.all([a.close(), b.close()]);
      await admin.quit();
      await redis.stop();
    }
  });

  it("falls back to the replica's share while Redis stalls, deciding a batch against the share", async () => {
    const redis = await startPrivateRedis();
    const admin = new Redis(redis.url);
    const limits = await replica(redis.url, 3); // 30 per minute over 3 replicas: 10 each while Redis is away
    try {
      await admin.call("CLIENT", "PAUSE", "10000", "WRITE");
      const hank = { urn: "urn:li:corpuser:hank" };
      const outcomes = await settle(Array.from({ length: 25 }, () => limits.consume(hank, "evaluations")));
      expect(outcomes.filter((o) => o === "ok")).toHaveLength(10);
      expect(outcomes.slice(0, 10)).toEqual(Array(10).fill("ok"));
    } finally {
      await admin.call("CLIENT", "UNPAUSE");
      await limits.close();
      await admin.quit();
      await redis.stop();
    }
  });
});
