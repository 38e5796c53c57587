/**
 * bench/tokens: createAccessToken, listAccessTokens (a page of 100 out of 10,000 tokens) and a bearer-authenticated
 * request, each against a bare Apollo echo mutation on the same stack, measured in the same run.
 */
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "pg";
import { createTestDatabase } from "@mdp/db/testing";
import { Hs256 } from "../../services/gateway/src/tokens/jwt";
import { hashToken } from "../../services/gateway/src/tokens/token-hash";
import { freePort, startService, uniqueName, waitUntilReady } from "../../test/support/services";
import { measure } from "../support/load";
import { printReport } from "../support/report";
import { spawn } from "node:child_process";

const ROOT = "urn:li:corpuser:admin";
const BULK = "urn:li:corpuser:bulk";

export async function benchTokens(): Promise<void> {
  const db = await createTestDatabase("bench_tokens");
  const [gatewayPort, echoPort] = [await freePort(), await freePort()];
  // AUTH_ENABLED=false lets the same request run with and without token verification.
  const gateway = startService("gateway", {
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-tokens"),
    PORT: String(gatewayPort),
    AUTH_ENABLED: "false",
    LOG_LEVEL: "warn",
  });
  const echo = spawn(
    process.execPath,
    [require.resolve("tsx/cli"), path.join(__dirname, "../support/echo-server.ts")],
    {
      env: { ...process.env, PORT: String(echoPort) },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const base = `http://127.0.0.1:${gatewayPort}/api/graphql`;
  try {
    await waitUntilReady(`http://127.0.0.1:${gatewayPort}`, gateway);
    await new Promise((resolve) => echo.stdout!.once("data", resolve));
    await seedTokens(db.url, 10_000);
    const asRoot = { "x-platform-actor": ROOT };
    const token = await createToken(base, asRoot);

    const gql = (query: string, variables: Record<string, unknown> = {}) => JSON.stringify({ query, variables });
    const echoResult = await measure({
      url: `http://127.0.0.1:${echoPort}/api/graphql`,
      body: gql(`mutation($i: String!) { echo(input: $i) }`, { i: "hello" }),
    });
    const create = await measure({
      url: base,
      headers: asRoot,
      body: gql(
        `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_HOUR, name: "bench"}) { accessToken } }`,
      ),
    });
    const list = await measure({
      url: base,
      headers: asRoot,
      body: gql(
        `{ listAccessTokens(input: {start: 0, count: 100, filters: [{field: "actorUrn", value: "${BULK}"}]}) { total tokens { urn id actorUrn } } }`,
      ),
    });
    const me = gql(`{ me { urn } }`);
    const headerOnly = await measure({ url: base, headers: asRoot, body: me });
    const bearer = await measure({ url: base, headers: { authorization: `Bearer ${token}` }, body: me });
    const verifyMicros = verifyCost(token);

    const rps = (r: { requestsPerSecond: number; p50Ms: number }) =>
      `${r.requestsPerSecond.toFixed(0)} req/s p50 ${r.p50Ms} ms`;
    const authCost = 1 - bearer.requestsPerSecond / headerOnly.requestsPerSecond;
    printReport("bench/tokens", `bare Apollo echo mutation, same stack: ${rps(echoResult)}`, [
      {
        name: "createAccessToken",
        value: rps(create),
        ratio: create.requestsPerSecond / echoResult.requestsPerSecond,
        target: ">= 0.6",
        met: create.requestsPerSecond / echoResult.requestsPerSecond >= 0.6,
      },
      {
        name: "listAccessTokens 100 of 10k",
        value: rps(list),
        ratio: list.requestsPerSecond / echoResult.requestsPerSecond,
        target: ">= 0.4",
        met: list.requestsPerSecond / echoResult.requestsPerSecond >= 0.4,
      },
      {
        name: "me, header only (no verification)",
        value: rps(headerOnly),
        ratio: headerOnly.requestsPerSecond / echoResult.requestsPerSecond,
        target: "-",
        met: true,
      },
      {
        name: "me, bearer token",
        value: rps(bearer),
        ratio: bearer.requestsPerSecond / headerOnly.requestsPerSecond,
        target: ">= 0.9",
        met: authCost <= 0.1,
      },
    ]);
    process.stdout.write(
      `  bearer authentication costs ${(authCost * 100).toFixed(1)}% of throughput (ratio above is against header-only);\n` +
        `  signature check + salted hash: ${verifyMicros.toFixed(1)} µs per token\n`,
    );
  } finally {
    echo.kill("SIGTERM");
    await gateway.stop();
    await db.drop();
  }
}

async function seedTokens(databaseUrl: string, n: number): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(
    `INSERT INTO access_token (id, name, actor_urn, owner_urn, token_hash, created_at, expires_at)
     SELECT gen_random_uuid(), 'seeded ' || i, $1, $1, md5(i::text) || md5((i + 1)::text),
            now() - i * interval '1 second', now() + interval '1 day'
     FROM generate_series(1, $2) AS i`,
    [BULK, n],
  );
  await client.query("ANALYZE access_token");
  await client.end();
}

async function createToken(url: string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({
      query: `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_DAY, name: "bench bearer"}) { accessToken } }`,
    }),
  });
  const body = (await res.json()) as { data: { createAccessToken: { accessToken: string } } };
  return body.data.createAccessToken.accessToken;
}

/** Median µs of the per-request cryptography of bearer authentication (the rest is a cached lookup). */
function verifyCost(token: string): number {
  const jwt = new Hs256(process.env.TOKEN_SIGNING_KEY ?? "development-signing-key-not-for-production-use");
  const samples: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const start = performance.now();
    jwt.verify(token);
    hashToken(token, "development-token-salt");
    samples.push((performance.now() - start) * 1000);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1]!;
}
