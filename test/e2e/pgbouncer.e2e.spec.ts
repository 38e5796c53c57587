/**
 * The whole system through PgBouncer in transaction pooling mode (scripts/pgbouncer.ts: a private pooler in front of
 * the test PostgreSQL): the gateway and the three workers are given the pooler's DATABASE_URL (migrations ran directly
 * against PostgreSQL, as docs/pooling.md says), and tokens, an evaluate, a runTest, a truncation, evaluation on
 * change and a webhook's delivery all work, every statement passing through the pooler, whose server connections are shared between
 * transactions: no session state, no named prepared statement and no session advisory lock can hold there.
 */
import { spawnSync } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import pg from "pg";
import { eventually } from "@mdp/core/testing";
import { createTestDatabase } from "@mdp/db/testing";
import { startPgBouncer, type PgBouncer } from "../../scripts/pgbouncer";
import {
  queuePrefix,
  gatewayUrl,
  startService,
  systemClient,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const headers = systemClient();
const TEST_URN = "urn:li:test:pooled-described";
const urnOf = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,pooled.t${i},PROD)`;
const DAY = 86_400_000;
const BASE = Date.UTC(2026, 0, 1);
const SERVER_CONNECTIONS = 3;

interface TaskStatus {
  state: string;
  progress: Record<string, number>;
}

describe("the system through PgBouncer in transaction mode", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pooler: PgBouncer;
  let baseUrl: string;
  let databaseName: string;
  const services: RunningService[] = [];

  const post = async (route: string, body: unknown, extra: Record<string, string> = headers) => {
    const res = await fetch(`${baseUrl}${route}`, { method: "POST", headers: extra, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const graphql = async (query: string, variables: Record<string, unknown> = {}, extra = headers) => {
    const res = await post("/api/graphql", { query, variables }, extra);
    expect(res.body.errors).toBeUndefined();
    return res.body.data as Record<string, unknown>;
  };
  const taskStatus = async (taskId: string) =>
    (await post("/gms/operations?action=getTaskStatus", { taskId })).body.value as TaskStatus;
  /** the pooler's own view, from its admin console (simple query protocol only) */
  const admin = async (command: string) => {
    const client = new pg.Client({ connectionString: pooler.url(db.url).replace(/\/[^/?]+(\?|$)/, "/pgbouncer$1") });
    await client.connect();
    try {
      return (await client.query(command)).rows as Array<Record<string, unknown>>;
    } finally {
      await client.end();
    }
  };
  const pooledTransactions = async () =>
    Number((await admin("SHOW STATS")).find((row) => row.database === databaseName)?.total_xact_count ?? 0);

  beforeAll(async () => {
    db = await createTestDatabase("e2e_pgbouncer"); // migrated directly, not through the pooler
    databaseName = new URL(db.url).pathname.slice(1);
    const server = new URL(db.url);
    pooler = await startPgBouncer(path.resolve(__dirname, "..", "..", ".data"), {
      server: { host: server.hostname, port: Number(server.port || 5432) },
      users: [decodeURIComponent(server.username || "postgres")],
      name: `pgbouncer-${process.pid}`,
      // far fewer server connections than the processes' pools hold (10 + 14 + 3): each is shared between clients
      // transaction by transaction, so nothing a process leaves on a session can reach it again
      poolSize: SERVER_CONNECTIONS,
    });
    const env = {
      DATABASE_URL: pooler.url(db.url),
      REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      QUEUE_PREFIX: queuePrefix("e2e-pgbouncer"),
      PORT: "0",
      ON_CHANGE_POLL_MS: "100",
    };
    const gateway = startService("gateway", env);
    services.push(
      gateway,
      startService("truncation-worker", env),
      startService("evaluation-worker", env),
      startService("webhook-worker", { ...env, WEBHOOK_POLL_MS: "100" }),
    );
    baseUrl = await gatewayUrl(gateway, 100_000);
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitForOutput(services[1]!, "worker running"),
      waitForOutput(services[2]!, "worker running"),
      waitForOutput(services[3]!, "worker running"),
    ]);
  }, 150_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await pooler?.stop();
    await db?.drop();
  });

  it("connects every process through the pooler", async () => {
    const clients = await admin("SHOW CLIENTS");
    // the gateway's and both workers' pools: several client connections to the test database
    expect(clients.filter((c) => c.database === databaseName).length).toBeGreaterThanOrEqual(3);
    expect(await pooledTransactions()).toBeGreaterThan(0);
    const servers = (await admin("SHOW SERVERS")).filter((s) => s.database === databaseName);
    expect(servers.length).toBeLessThanOrEqual(SERVER_CONNECTIONS);
  });

  it("creates, uses and revokes an access token", async () => {
    const created = await graphql(
      `
        mutation ($i: GetAccessTokenInput!) {
          createAccessToken(input: $i) {
            accessToken
            metadata {
              id
            }
          }
        }
      `,
      { i: { type: "PERSONAL", actorUrn: "urn:li:corpuser:admin", duration: "ONE_HOUR", name: "pooled" } },
    );
    const { accessToken, metadata } = created.createAccessToken as { accessToken: string; metadata: { id: string } };
    const bearer = { "content-type": "application/json", authorization: `Bearer ${accessToken}` };
    expect(await graphql("{ me { urn } }", {}, bearer)).toEqual({ me: { urn: "urn:li:corpuser:admin" } });
    expect(await graphql(`mutation { revokeAccessToken(tokenId: "${metadata.id}") }`)).toEqual({
      revokeAccessToken: true,
    });
    await eventually(
      "the revoked token refused",
      async () => (await post("/api/graphql", { query: "{ me { urn } }" }, bearer)).status === 401,
    );
  });

  it("evaluates, runs a test and evaluates on change", async () => {
    const proposals = Array.from({ length: 20 }, (_, i) => ({
      entityType: "dataset",
      entityUrn: urnOf(i),
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify(i % 2 ? {} : { description: `t${i}` }) },
    }));
    expect((await post("/gms/aspects?action=ingestProposalBatch", { proposals })).status).toBe(200);
    const definition = JSON.stringify({
      on: { types: ["dataset"] },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
    expect(
      await graphql(
        `
          mutation ($input: CreateTestInput!) {
            createTest(input: $input)
          }
        `,
        {
          input: { id: "pooled-described", name: "described", category: "Quality", definition: { json: definition } },
        },
      ),
    ).toEqual({ createTest: TEST_URN });

    const evaluated = await post("/gms/test?action=evaluate", { urn: urnOf(0) });
    expect(evaluated).toMatchObject({ status: 200, body: { value: { passing: [{ test: TEST_URN }], failing: [] } } });

    const before = await pooledTransactions();
    const run = await graphql(`mutation { runTest(urn: "${TEST_URN}", push: false, batchSize: 5) }`);
    const runId = run.runTest as string;
    await eventually("the test run to complete", async () => (await taskStatus(runId)).state === "completed", {
      timeoutMs: 30_000,
    });
    expect((await taskStatus(runId)).progress).toMatchObject({ evaluated: 20, total: 20, passing: 10, failing: 10 });
    expect(await pooledTransactions()).toBeGreaterThan(before);

    // a change to an entity the test covers: evaluated by the worker's change stream, its results pushed
    const changed = urnOf(1);
    const proposal = { ...proposals[1]!, aspect: { contentType: "application/json", value: '{"description":"now"}' } };
    expect((await post("/gms/aspects?action=ingestProposal", { proposal })).status).toBe(200);
    await eventually(
      "the change evaluated and its result pushed",
      async () => {
        const res = await fetch(`${baseUrl}/gms/entities/${encodeURIComponent(changed)}`, { headers });
        const aspects = ((await res.json()) as { value?: { aspects?: Record<string, unknown> } }).value?.aspects;
        const results = aspects?.testResults as { passing?: Array<{ test: string }> } | undefined;
        return results?.passing?.some((r) => r.test === TEST_URN) ?? false;
      },
      { timeoutMs: 30_000 },
    );
  }, 90_000);

  it("migrates a database directly (DATABASE_DIRECT_URL) while its services' DATABASE_URL names the pooler", async () => {
    const empty = await createTestDatabase("e2e_pgbouncer_migrate", { migrated: false });
    try {
      const name = new URL(empty.url).pathname.slice(1);
      const migrate = spawnSync(process.execPath, ["--import", "tsx", "libs/db/src/migrate/cli.ts", "deploy"], {
        cwd: path.resolve(__dirname, "..", ".."),
        env: { ...process.env, DATABASE_URL: pooler.url(empty.url), DATABASE_DIRECT_URL: empty.url },
        encoding: "utf8",
      });
      expect(migrate.stderr).toBe("");
      expect(migrate.stdout).toMatch(new RegExp(`${name}: applied \\d+ migration\\(s\\)`));
      // the migration's session (its advisory lock) was PostgreSQL's own: not one statement went through the pooler
      const stats = (await admin("SHOW STATS")).find((row) => row.database === name);
      expect(Number(stats?.total_xact_count ?? 0)).toBe(0);
    } finally {
      await empty.drop();
    }
  }, 60_000);

  it("delivers a webhook", async () => {
    const received: string[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push(Buffer.concat(chunks).toString());
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      await graphql(
        `
          mutation ($i: CreateWebhookSubscriptionInput!) {
            createWebhookSubscription(input: $i) {
              secret
            }
          }
        `,
        { i: { url, eventTypes: ["MetadataChangeLog_v1"] } },
      );
      const proposal = {
        entityType: "dataset",
        entityUrn: urnOf(200),
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: "hooked" }) },
      };
      expect((await post("/gms/aspects?action=ingestProposal", { proposal })).status).toBe(200);
      await eventually("the change delivered", async () => received.some((body) => body.includes(urnOf(200))), {
        timeoutMs: 30_000,
      });
    } finally {
      receiver.close();
    }
  }, 60_000);

  it("truncates a time-series aspect in a task", async () => {
    const urn = urnOf(100);
    const proposals = Array.from({ length: 6 }, (_, i) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProfile",
      changeType: "UPSERT",
      aspect: {
        contentType: "application/json",
        value: JSON.stringify({ timestampMillis: BASE + i * DAY, rowCount: i }),
      },
    }));
    expect((await post("/gms/aspects?action=ingestProposalBatch", { proposals })).status).toBe(200);
    const started = await post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: BASE + 3 * DAY,
      dryRun: false,
      batchSize: 1,
    });
    expect(started.status).toBe(200);
    const taskId = started.body.value as string;
    await eventually("the truncation to complete", async () => (await taskStatus(taskId)).state === "completed", {
      timeoutMs: 30_000,
    });
    expect((await taskStatus(taskId)).progress).toMatchObject({ deleted: 3, toDelete: 3, percent: 100 });
  }, 60_000);
});
