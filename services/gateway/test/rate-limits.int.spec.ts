/**
 * Per-actor rate limits shared by every replica (Redis): two gateways on one database, Redis and prefix count one
 * actor's token mints, evaluations and test runs together, so the second replica is the one that refuses; the refusal
 * is a 429 with Retry-After naming the limit (HTTP body per the contract; GraphQL extensions.code TOO_MANY_REQUESTS);
 * the system client is not limited (by how it authenticated: a token acting for the system actor is limited like
 * anyone's), a schedule's firing counts for its owner, and 0 turns a limit off. While Redis stalls and under concurrent
 * requests: rate-limits-under-load.int.spec.ts.
 */
import { SYSTEM_ACTOR_URN, createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import {
  CREATE_TOKEN,
  bearer,
  createToken,
  grant,
  mintToken,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { Redis } from "ioredis";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { RateLimits } from "../src/shared/rate-limits";
import { ALICE, LIMITS, post, dataset, mint } from "./support/rate-limits";

describe("rate limits", () => {
  let a: Harness;
  let b: Harness;
  let aliceToken: string;
  let worker: RunningWorker;

  beforeAll(async () => {
    a = await startGateway(LIMITS);
    b = await startGateway({ ...LIMITS, DATABASE_URL: a.config.DATABASE_URL, QUEUE_PREFIX: a.config.QUEUE_PREFIX });
    worker = await startEvaluationWorker(a);
    await grant(a, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS", "MANAGE_TESTS"]);
    aliceToken = (await createToken(a, ALICE)).token; // the system client's mint: not counted
  });
  afterAll(async () => {
    await worker?.close();
    await b?.close();
    await a?.close();
  });

  it("counts an actor's token mints on every replica together: the replica that sees the 4th refuses it", async () => {
    expect((await mint(a, bearer(aliceToken))).body.errors).toBeUndefined();
    expect((await mint(a, bearer(aliceToken))).body.errors).toBeUndefined();
    expect((await mint(b, bearer(aliceToken))).body.errors).toBeUndefined();
    const refused = await mint(b, bearer(aliceToken));
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
    expect(refused.body.data).toEqual({ createAccessToken: null });
    expect(refused.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining("at most 3 access token creations per minute per actor"),
      extensions: { code: "TOO_MANY_REQUESTS" },
    });
    expect(refused.body.errors?.[0]?.message).toContain("RATE_LIMIT_TOKEN_MINTS_PER_MINUTE");
    // ...and so does the other replica now.
    expect((await mint(a, bearer(aliceToken))).status).toBe(429);
  });

  it("keeps each actor's counter out of the queues' hash tag, so a Redis Cluster spreads the counters over its masters", async () => {
    // The mints above were counted: under the prefix without its braces, never in the tagged queues' slot.
    const redis = new Redis(a.config.REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const untagged = a.config.QUEUE_PREFIX.replace(/[{}]/g, "");
      expect(a.config.QUEUE_PREFIX).toMatch(/^\{.+\}$/);
      expect(await redis.keys(`${untagged}:rate-limit:tokenMints:*`)).not.toEqual([]);
      expect(await redis.keys(`${a.config.QUEUE_PREFIX}:rate-limit:*`)).toEqual([]); // braces are no glob syntax
    } finally {
      await redis.quit();
    }
  });

  it("counts a token mint only once it has passed its checks", async () => {
    const dave = "urn:li:corpuser:dave";
    await grant(a, dave, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const daveToken = (await createToken(a, dave)).token;
    // Refused (another user's token without MANAGE_ACCESS_TOKENS, and a bad name): nothing counted.
    for (let i = 0; i < 4; i++) {
      const forOther = await mint(a, bearer(daveToken));
      expect(forOther.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    }
    const own = (name: string) =>
      post(
        a,
        "/api/graphql",
        { query: CREATE_TOKEN, variables: { input: { type: "PERSONAL", actorUrn: dave, duration: "ONE_HOUR", name } } },
        bearer(daveToken),
      );
    for (let i = 0; i < 4; i++) expect((await own("")).body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    for (let i = 0; i < 3; i++) expect((await own("mine")).body.errors).toBeUndefined();
    expect((await own("mine")).status).toBe(429);
  });

  it("does not limit the system client, the trusted front end acting for its users", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await mint(i % 2 ? a : b, systemClientHeaders(ALICE));
      expect(res.body.errors).toBeUndefined();
      expect(res.status).toBe(200);
    }
  });

  it("exempts the system client, not its urn: a token acting as the system actor is refused, the system client naming no user is not limited", async () => {
    // createAccessToken refuses to make one; one made before is refused at use (it would hold every privilege).
    const token = await mintToken(a, SYSTEM_ACTOR_URN, Math.floor(Date.now() / 1000) + 3600);
    expect((await a.graphql(`{ me { urn } }`, {}, bearer(token))).status).toBe(401);
    const systemClient = { authorization: systemClientHeaders(ALICE).authorization! };
    for (let i = 0; i < 4; i++) expect((await mint(a, systemClient)).body.errors).toBeUndefined();
  });

  it("counts a schedule's firing (no via) for its owner; the system actor's own schedules, set by the system client, not at all", async () => {
    const connection = RateLimits.connect(a.config, createLogger("rate-limits-test", "silent"));
    const limits = new RateLimits(connection, a.config);
    // Counted in Redis from the first check: until its connection is ready, the in-memory insurance would count.
    await eventually("the limiter's Redis connection is ready", () => connection.status === "ready");
    try {
      const owner = { urn: "urn:li:corpuser:firing-owner" };
      await expect(limits.consume(owner, "testRuns")).resolves.toBeUndefined();
      await expect(limits.consume(owner, "testRuns")).rejects.toMatchObject({ code: "TOO_MANY_REQUESTS" });
      for (let i = 0; i < 3; i++) {
        await expect(limits.consume({ urn: SYSTEM_ACTOR_URN }, "testRuns")).resolves.toBeUndefined();
        await expect(limits.consume({ urn: ALICE, via: "system" }, "testRuns")).resolves.toBeUndefined();
      }
      // The same urn in a request that did not authenticate as the system client is limited: the first is the
      // minute's one run (the firings above counted nothing), the next is refused.
      await expect(limits.consume({ urn: SYSTEM_ACTOR_URN, via: "token" }, "testRuns")).resolves.toBeUndefined();
      await expect(limits.consume({ urn: SYSTEM_ACTOR_URN, via: "header" }, "testRuns")).rejects.toMatchObject({
        code: "TOO_MANY_REQUESTS",
      });
    } finally {
      await limits.close();
    }
  });

  it("counts evaluations by the entities asked for, batchEvaluate's urns included: 429 with Retry-After", async () => {
    // Counted once the privileges and the body have passed: malformed requests (400) and refusals (403) cost nothing.
    for (let i = 0; i < 3; i++) {
      const malformed = await post(
        a,
        "/gms/test?action=batchEvaluate",
        { urns: Array(50).fill("x") },
        bearer(aliceToken),
      );
      expect(malformed.status).toBe(400);
    }
    const carol = "urn:li:corpuser:carol";
    await grant(a, carol, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const carolToken = (await createToken(a, carol)).token;
    expect((await post(a, "/gms/test?action=evaluate", { urn: dataset("a") }, bearer(carolToken))).status).toBe(403);
    // Well-formed requests count, even for entities that do not exist (the worker's 404 comes after the work).
    const batch = await post(
      a,
      "/gms/test?action=batchEvaluate",
      { urns: [dataset("a"), dataset("b"), dataset("c"), dataset("d")] },
      bearer(aliceToken),
    );
    expect(batch.status).toBe(404);
    expect((await post(b, "/gms/test?action=evaluate", { urn: dataset("a") }, bearer(aliceToken))).status).toBe(404);
    const refused = await post(b, "/gms/test?action=evaluate", { urn: dataset("a") }, bearer(aliceToken));
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.body).toMatchObject({
      status: 429,
      code: "TOO_MANY_REQUESTS",
      message: expect.stringContaining("at most 5 metadata-test entity evaluations per minute per actor"),
    });
    expect(refused.body.message).toContain("RATE_LIMIT_EVALUATIONS_PER_MINUTE");
    // A batch larger than the whole limit is not refused forever: it counts as the whole limit (another actor here).
    const bob = "urn:li:corpuser:bob";
    await grant(a, bob, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
    const bobToken = (await createToken(a, bob)).token;
    const urns = Array.from({ length: 50 }, (_, i) => dataset(`big${i}`));
    expect((await post(b, "/gms/test?action=batchEvaluate", { urns }, bearer(bobToken))).status).toBe(404);
    expect((await post(a, "/gms/test?action=evaluate", { urn: dataset("a") }, bearer(bobToken))).status).toBe(429);
  });

  it("limits runTest, counting only runs of tests that exist", async () => {
    const run = (h: Harness, urn: string) =>
      post(h, "/api/graphql", { query: `mutation { runTest(urn: "${urn}") }` }, bearer(aliceToken));
    // A test that does not exist (404) costs nothing.
    expect((await run(a, "urn:li:test:none")).body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    expect((await run(b, "urn:li:test:none")).body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    const created = await a.graphql(
      `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      {
        input: {
          id: "counted",
          name: "counted",
          category: "x",
          definition: {
            json: JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "x", operator: "exists" } }),
          },
        },
      },
      systemClientHeaders(ALICE),
    );
    expect(created.body.errors).toBeUndefined();
    expect((await run(a, "urn:li:test:counted")).body.errors).toBeUndefined();
    const refused = await run(b, "urn:li:test:counted");
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).not.toBeNull();
    expect(refused.body.errors?.[0]?.message).toContain("RATE_LIMIT_TEST_RUNS_PER_MINUTE");
  });

  it("turns a limit off with 0", async () => {
    const off = await startGateway({
      RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "0",
      RATE_LIMIT_EVALUATIONS_PER_MINUTE: "0",
      RATE_LIMIT_TEST_RUNS_PER_MINUTE: "0",
      RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: "0",
    });
    const offWorker = await startEvaluationWorker(off);
    try {
      await grant(off, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
      const token = (await createToken(off, ALICE)).token;
      for (let i = 0; i < 6; i++) expect((await mint(off, bearer(token))).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const urns = [dataset("x"), dataset("y"), dataset("z")];
        const res = await post(off, "/gms/test?action=batchEvaluate", { urns }, bearer(token));
        expect(res.status).toBe(404);
      }
    } finally {
      await offWorker.close();
      await off.close();
    }
  });
});

describe("rate limit settings", () => {
  it("refuse a negative or fractional value naming the variable", async () => {
    const { loadConfig } = await import("@mdp/core");
    const base = { DATABASE_URL: "postgresql://x@127.0.0.1/x", REDIS_URL: "redis://127.0.0.1:6379" };
    expect(() => loadConfig({ ...base, RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "-1" })).toThrow(
      "RATE_LIMIT_TOKEN_MINTS_PER_MINUTE must be a whole number",
    );
    expect(() => loadConfig({ ...base, RATE_LIMIT_REPLICAS: "0" })).toThrow("RATE_LIMIT_REPLICAS must be at least 1");
    expect(loadConfig(base)).toMatchObject({
      RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: 30,
      RATE_LIMIT_EVALUATIONS_PER_MINUTE: 1200,
      RATE_LIMIT_TEST_RUNS_PER_MINUTE: 10,
      RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: 30,
      RATE_LIMIT_REPLICAS: 1,
    });
  });
});
