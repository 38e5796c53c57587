/**
 * Per-actor rate limits shared by every replica (Redis): two gateways on one database, Redis and prefix count one
 * actor's token mints, evaluations and test runs together, so the second replica is the one that refuses; the refusal
 * is a 429 with Retry-After naming the limit (HTTP body per the contract; GraphQL extensions.code TOO_MANY_REQUESTS);
 * the system client is not limited, and 0 turns a limit off.
 */
import {
  CREATE_TOKEN,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { Redis } from "ioredis";
import { startPrivateRedis } from "./support/private-redis";

const ALICE = "urn:li:corpuser:alice";
const LIMITS = {
  RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "3",
  RATE_LIMIT_EVALUATIONS_PER_MINUTE: "5",
  RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1",
};

async function post(h: Harness, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${h.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as {
      status?: number;
      code?: string;
      message?: string;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
      data?: Record<string, unknown> | null;
    },
  };
}

const mint = (h: Harness, headers: Record<string, string>) =>
  post(
    h,
    "/api/graphql",
    {
      query: CREATE_TOKEN,
      variables: { input: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_HOUR", name: "rate" } },
    },
    headers,
  );

describe("rate limits", () => {
  let a: Harness;
  let b: Harness;
  let aliceToken: string;

  beforeAll(async () => {
    a = await startGateway(LIMITS);
    b = await startGateway({ ...LIMITS, DATABASE_URL: a.config.DATABASE_URL, QUEUE_PREFIX: a.config.QUEUE_PREFIX });
    await grant(a, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS", "MANAGE_TESTS"]);
    aliceToken = (await createToken(a, ALICE)).token; // the system client's mint: not counted
  });
  afterAll(async () => {
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

  it("does not limit the system client, the trusted front end acting for its users", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await mint(i % 2 ? a : b, systemClientHeaders(ALICE));
      expect(res.body.errors).toBeUndefined();
      expect(res.status).toBe(200);
    }
  });

  it("counts evaluations by the entities asked for, batchEvaluate's urns included: 429 with Retry-After", async () => {
    // Counted before the body is checked: these are refused as malformed, but each urn asked for counts.
    const batch = await post(a, "/gms/test?action=batchEvaluate", { urns: ["x", "y", "z", "w"] }, bearer(aliceToken));
    expect(batch.status).toBe(400);
    expect((await post(b, "/gms/test?action=evaluate", { urn: "x" }, bearer(aliceToken))).status).toBe(400);
    const refused = await post(b, "/gms/test?action=evaluate", { urn: "x" }, bearer(aliceToken));
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
    const big = await post(b, "/gms/test?action=batchEvaluate", { urns: Array(50).fill("x") }, bearer(bobToken));
    expect(big.status).toBe(400);
    expect((await post(a, "/gms/test?action=evaluate", { urn: "x" }, bearer(bobToken))).status).toBe(429);
  });

  it("limits runTest", async () => {
    const run = (h: Harness) =>
      post(h, "/api/graphql", { query: `mutation { runTest(urn: "urn:li:test:none") }` }, bearer(aliceToken));
    expect((await run(a)).body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    const refused = await run(b);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).not.toBeNull();
    expect(refused.body.errors?.[0]?.message).toContain("RATE_LIMIT_TEST_RUNS_PER_MINUTE");
  });

  it("turns a limit off with 0", async () => {
    const off = await startGateway({
      RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "0",
      RATE_LIMIT_EVALUATIONS_PER_MINUTE: "0",
      RATE_LIMIT_TEST_RUNS_PER_MINUTE: "0",
    });
    try {
      await grant(off, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
      const token = (await createToken(off, ALICE)).token;
      for (let i = 0; i < 6; i++) expect((await mint(off, bearer(token))).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const res = await post(off, "/gms/test?action=batchEvaluate", { urns: ["x", "y", "z"] }, bearer(token));
        expect(res.status).toBe(400);
      }
    } finally {
      await off.close();
    }
  });
});

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
      RATE_LIMIT_REPLICAS: 1,
    });
  });
});
