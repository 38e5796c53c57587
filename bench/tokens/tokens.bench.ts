/**
 * bench/tokens: createAccessToken, listAccessTokens (a page of 100 out of 10,000 tokens) and a bearer-authenticated
 * request, each against a bare Apollo echo mutation on the same stack, measured in the same run: rounds in which each
 * of them runs once, so each ratio is the median of ratios between runs made moments apart. Create and list are each
 * shown beside their floors: the same operation on bare Apollo doing only its core work
 * (../support/token-floor-server.ts), and for the list also its SQL behind bare express (list-floor-server.ts).
 * Targets: create >= 0.9x its bare-Apollo floor, list >= 0.9x the same SQL behind bare express, bearer >= 0.9x the
 * system client; the bearer path with usage recording (token-usage.recorder.ts) >= 0.95x the same path on a second
 * gateway of the same database with ACCESS_TOKEN_USAGE_RECORDING=false, in rounds of their own.
 */
import { createHmac, hash, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "pg";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitUntilReady } from "../../test/support/services";
import { measureInterleaved, ratio } from "../support/load";
import { productionSetup } from "../support/production";
import { spawnBenchProcess } from "../support/bench-process";
import { gatewaySchema } from "../support/gateway-schema";
import { printReport } from "../support/report";

const ROOT = "urn:li:corpuser:admin";
const BULK = "urn:li:corpuser:bulk";

export async function benchTokens(): Promise<void> {
  const db = await createTestDatabase("bench_tokens");
  const [gatewayPort, echoPort, floorPort, apolloFloorPort, unrecordedPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const production = productionSetup();
  const gateway = startService("gateway", {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-tokens"),
    PORT: String(gatewayPort),
    LOG_LEVEL: "warn",
  });
  // The same gateway on the same database, recording no usage: the bearer path's cost of recording it.
  const unrecorded = startService("gateway", {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-tokens-unrecorded"),
    PORT: String(unrecordedPort),
    LOG_LEVEL: "warn",
    ACCESS_TOKEN_USAGE_RECORDING: "false",
  });
  const echo = spawnBenchProcess(path.join(__dirname, "../support/echo-server.ts"), { PORT: String(echoPort) });
  const listFloor = spawnBenchProcess(path.join(__dirname, "list-floor-server.ts"), {
    PORT: String(floorPort),
    DATABASE_URL: db.url,
    LIST_ACTOR_URN: BULK,
  });
  // Started once the gateway has described its schema, which this floor serves.
  let apolloFloor: ReturnType<typeof spawnBenchProcess> | undefined;
  const schemaDir = mkdtempSync(path.join(tmpdir(), "bench-tokens-"));
  const base = `http://127.0.0.1:${gatewayPort}/api/graphql`;
  const apolloFloorUrl = `http://127.0.0.1:${apolloFloorPort}/api/graphql`;
  // The system client acting for root: authenticated by a constant-time secret compare, no token to verify.
  const asRoot = production.systemClient(ROOT);
  try {
    await waitUntilReady(`http://127.0.0.1:${gatewayPort}`, gateway);
    await waitUntilReady(`http://127.0.0.1:${unrecordedPort}`, unrecorded);
    const schemaFile = path.join(schemaDir, "schema.graphql");
    writeFileSync(schemaFile, await gatewaySchema(base, asRoot));
    apolloFloor = spawnBenchProcess(path.join(__dirname, "../support/token-floor-server.ts"), {
      PORT: String(apolloFloorPort),
      DATABASE_URL: db.url,
      LIST_ACTOR_URN: BULK,
      SCHEMA_FILE: schemaFile,
    });
    await Promise.all(
      [echo, listFloor, apolloFloor].map((child) => new Promise((resolve) => child.stdout!.once("data", resolve))),
    );
    await seedTokens(db.url, 10_000);
    const token = await createToken(base, asRoot);

    const gql = (query: string, variables: Record<string, unknown> = {}) => JSON.stringify({ query, variables });
    const me = gql(`{ me { urn } }`);
    const echoTarget = {
      url: `http://127.0.0.1:${echoPort}/api/graphql`,
      body: gql(`mutation($i: String!) { echo(input: $i) }`, { i: "hello" }),
    };
    // Creation adds thousands of tokens a second: measured on its own, after the rest, so the list is timed on the
    // table it describes (10,000 tokens of one user) rather than on one growing faster than autovacuum and
    // autoanalyze follow, whose stale statistics would make the list's figure depend on how fast creation went.
    const listQuery = gql(
      `{ listAccessTokens(input: {start: 0, count: 100, filters: [{field: "actorUrn", value: "${BULK}"}]}) { total tokens { urn id actorUrn } } }`,
    );
    const createMutation = gql(
      `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_HOUR, name: "bench"}) { accessToken } }`,
    );
    // Usage recording: the bearer path with and without it, paired round by round. The gateway that records
    // has served every round above; the other only its warm-up: a round of both first, unmeasured, so both run code
    // the JIT has optimised (a first measurement paired a warm gateway with a cold one, 2x apart under load).
    const measureUsagePair = async () => {
      const bearerOn = (port: number) => ({
        url: `http://127.0.0.1:${port}/api/graphql`,
        headers: { authorization: `Bearer ${token}` },
        body: me,
      });
      const usagePair = { recorded: bearerOn(gatewayPort), unrecorded: bearerOn(unrecordedPort) };
      await measureInterleaved(usagePair, { rounds: 2, seconds: 5 });
      // More rounds than the others: the difference sought is a few per cent, the noise of a loaded machine more.
      const u = await measureInterleaved(usagePair, { rounds: 9 });
      return { u, usageRecording: ratio(u.recorded, u.unrecorded) };
    };
    const rpsOf = (m: { requestsPerSecond: number; p50Ms: number }) =>
      `${m.requestsPerSecond.toFixed(0)} req/s p50 ${m.p50Ms} ms`;
    const usageRow = (u: Awaited<ReturnType<typeof measureUsagePair>>) => ({
      name: "TARGET me, bearer, usage recorded ÷ not recorded",
      value: `${rpsOf(u.u.recorded)} vs ${rpsOf(u.u.unrecorded)}`,
      ratio: u.usageRecording.median,
      spread: u.usageRecording,
      target: ">= 0.95",
      met: u.usageRecording.median >= 0.95,
    });
    // BENCH_TOKENS_USAGE_ONLY=1: only the usage-recording pair (a minute instead of several), for a loaded machine.
    if (process.env.BENCH_TOKENS_USAGE_ONLY === "1") {
      const only = await measureUsagePair();
      printReport("bench/tokens (usage recording only)", "the same gateway recording no usage", [usageRow(only)]);
      process.stdout.write(
        `  recording the token's usage costs the bearer path ${((1 - only.usageRecording.median) * 100).toFixed(1)}%\n`,
      );
      return;
    }
    const r = await measureInterleaved({
      echo: echoTarget,
      list: { url: base, headers: asRoot, body: listQuery },
      listFloor: { url: `http://127.0.0.1:${floorPort}/list`, body: "{}" },
      listApolloFloor: { url: apolloFloorUrl, body: listQuery },
      systemClient: { url: base, headers: asRoot, body: me },
      bearer: { url: base, headers: { authorization: `Bearer ${token}` }, body: me },
    });
    const c = await measureInterleaved({
      echo: echoTarget,
      create: { url: base, headers: asRoot, body: createMutation },
      createFloor: { url: apolloFloorUrl, body: createMutation },
    });
    const { u, usageRecording } = await measureUsagePair();
    const verifyMicros = verifyCost(token, production.secrets);

    const rps = (m: { requestsPerSecond: number; p50Ms: number }) =>
      `${m.requestsPerSecond.toFixed(0)} req/s p50 ${m.p50Ms} ms`;
    const create = ratio(c.create, c.echo);
    const createFloor = ratio(c.createFloor, c.echo);
    const listApolloFloor = ratio(r.listApolloFloor, r.echo);
    const list = ratio(r.list, r.echo);
    const listFloorRatio = ratio(r.listFloor, r.echo);
    const systemClient = ratio(r.systemClient, r.echo);
    const bearer = ratio(r.bearer, r.systemClient);
    // The targets: each operation against the floor of its own work, paired round by round.
    const createVsFloor = ratio(c.create, c.createFloor);
    const listVsFloor = ratio(r.list, r.listFloor);
    printReport(
      "bench/tokens",
      `bare Apollo echo mutation, same stack: ${rps(r.echo)} (${rps(c.echo)} beside create)`,
      [
        {
          name: "createAccessToken",
          value: rps(c.create),
          ratio: create.median,
          spread: create,
          target: "-",
          met: true,
        },
        {
          name: "  its floor: the same INSERT, bare Apollo",
          value: rps(c.createFloor),
          ratio: createFloor.median,
          spread: createFloor,
          target: "-",
          met: true,
        },
        {
          name: "listAccessTokens 100 of 10k",
          value: rps(r.list),
          ratio: list.median,
          spread: list,
          target: "-",
          met: true,
        },
        {
          name: "  its floor: a constant page, bare Apollo",
          value: rps(r.listApolloFloor),
          ratio: listApolloFloor.median,
          spread: listApolloFloor,
          target: "-",
          met: true,
        },
        {
          name: "  its floor: the same SQL, bare express",
          value: rps(r.listFloor),
          ratio: listFloorRatio.median,
          spread: listFloorRatio,
          target: "-",
          met: true,
        },
        {
          name: "TARGET create ÷ its bare-Apollo floor",
          value: `${rps(c.create)} / ${c.createFloor.requestsPerSecond.toFixed(0)}`,
          ratio: createVsFloor.median,
          spread: createVsFloor,
          target: ">= 0.9",
          met: createVsFloor.median >= 0.9,
        },
        {
          name: "TARGET list ÷ the same SQL, bare express",
          value: `${rps(r.list)} / ${r.listFloor.requestsPerSecond.toFixed(0)}`,
          ratio: listVsFloor.median,
          spread: listVsFloor,
          target: ">= 0.9",
          met: listVsFloor.median >= 0.9,
        },
        {
          name: "me, system client (no token)",
          value: rps(r.systemClient),
          ratio: systemClient.median,
          spread: systemClient,
          target: "-",
          met: true,
        },
        {
          name: "me, bearer token",
          value: rps(r.bearer),
          ratio: bearer.median,
          spread: bearer,
          target: ">= 0.9",
          met: bearer.median >= 0.9,
        },
        usageRow({ u, usageRecording }),
      ],
    );
    process.stdout.write(
      `  ratios: median over rounds of each round's pair (lowest–highest round); bearer is against the system client:\n` +
        `  bearer authentication costs ${((1 - bearer.median) * 100).toFixed(1)}% of throughput;\n` +
        `  recording the token's usage costs the bearer path ${((1 - usageRecording.median) * 100).toFixed(1)}%;\n` +
        `  its cryptography: ${verifyMicros.firstUse.toFixed(1)} µs on a token's first use (signature + salted hash), ` +
        `${verifyMicros.laterUse.toFixed(1)} µs on later uses (SHA-256)\n`,
    );
  } finally {
    echo.kill("SIGTERM");
    listFloor.kill("SIGTERM");
    apolloFloor?.kill("SIGTERM");
    await gateway.stop();
    await unrecorded.stop();
    await db.drop();
    rmSync(schemaDir, { recursive: true, force: true });
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
  // As autovacuum would soon after a bulk load: statistics, and the visibility map that lets counts use index-only
  // scans. Without it the first minute after loading measures heap fetches that a running system does not make.
  await client.query("VACUUM ANALYZE access_token");
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

/**
 * Median µs of the cryptography of bearer authentication (the rest is cached lookups), with the primitives the gateway
 * uses (node:crypto): a token's first use checks the HS256 signature and decodes the claims, then computes the salted
 * hash (HMAC-SHA256 keyed with TOKEN_SALT) to compare with the stored one; later uses are recognised by the token's
 * SHA-256 (TokenVerifier.verify).
 */
function verifyCost(
  token: string,
  secrets: { TOKEN_SIGNING_KEY: string; TOKEN_SALT: string },
): { firstUse: number; laterUse: number } {
  const [header, payload, signature] = token.split(".") as [string, string, string];
  const median = (measure: () => void) => {
    const samples: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const start = performance.now();
      measure();
      samples.push((performance.now() - start) * 1000);
    }
    return samples.sort((a, b) => a - b)[samples.length >> 1]!;
  };
  return {
    firstUse: median(() => {
      const expected = createHmac("sha256", secrets.TOKEN_SIGNING_KEY).update(`${header}.${payload}`).digest();
      if (!timingSafeEqual(Buffer.from(signature, "base64url"), expected)) throw new Error("bad signature");
      JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      createHmac("sha256", secrets.TOKEN_SALT).update(token).digest();
    }),
    laterUse: median(() => hash("sha256", token, "base64url")),
  };
}
