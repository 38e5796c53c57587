/**
 * The real gateway and both workers as separate processes, on a database and queue prefix of this test's own:
 * readiness, authentication and error bodies over HTTP, a job round trip through each queue, clean shutdown.
 */
import { QueueEvents } from "bullmq";
import { DEVELOPMENT_SECRETS } from "@mdp/core";
import { createDatabase, inTransaction, TimeseriesStore, type Database, type PrismaClient } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { createRedis, Producer, QUEUE_NAMES, type RedisConnection } from "@mdp/queues";
import {
  freePort,
  startService,
  queuePrefix,
  uniqueName,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const systemClient = `Basic ${Buffer.from(`${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID}:${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET}`).toString("base64")}`;
const ADMIN = "urn:li:corpuser:admin";
const PROFILE = { entityType: "dataset", aspectName: "datasetProfile" };

describe("the system as separate processes", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let prisma: PrismaClient;
  let redis: RedisConnection;
  let services: RunningService[];
  let gateway: RunningService;
  let baseUrl: string;
  const prefix = queuePrefix("e2e-foundation");

  beforeAll(async () => {
    db = await createTestDatabase("e2e_foundation");
    database = createDatabase(db.url);
    prisma = database.prisma;
    redis = createRedis(REDIS_URL, "worker");
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix, PORT: String(port) };
    gateway = startService("gateway", env);
    services = [gateway, startService("truncation-worker", env), startService("evaluation-worker", env)];
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitForOutput(services[1]!, "worker running"),
      waitForOutput(services[2]!, "worker running"),
    ]);
  });

  afterAll(async () => {
    await Promise.all((services ?? []).map((s) => s.stop()));
    await redis?.quit();
    await database?.close();
    await db?.drop();
  });

  it("answers /health and /ready without credentials, with every check ok", async () => {
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    const ready = await fetch(`${baseUrl}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, checks: { postgres: "ok", redis: "ok", migrations: "ok" } });
  });

  it("refuses a GraphQL request without credentials with 401 and UNAUTHENTICATED", async () => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ me { urn } }" }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      errors: [{ message: "Request is missing 'Authorization' header.", extensions: { code: "UNAUTHENTICATED" } }],
    });
  });

  it("refuses unknown routes without credentials instead of revealing what exists", async () => {
    const res = await fetch(`${baseUrl}/gms/nothing-here`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ status: 401, code: "UNAUTHENTICATED" });
  });

  it("serves GraphQL to the system client acting for a user, at both paths", async () => {
    for (const path of ["/api/graphql", "/graphql"]) {
      const res = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: systemClient, "x-platform-actor": ADMIN },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(await res.json()).toEqual({ data: { me: { urn: ADMIN } } });
    }
  });

  it("answers malformed JSON with 400 and the documented error body", async () => {
    const res = await fetch(`${baseUrl}/gms/operations?action=getIndexSizes`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: systemClient, "x-platform-actor": ADMIN },
      body: '{"entityType": ',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      status: 400,
      code: "BAD_USER_INPUT",
      message: "Request body is not valid JSON.",
    });
  });

  it("answers a body over 1 MiB with 413", async () => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: systemClient, "x-platform-actor": ADMIN },
      body: JSON.stringify({ query: "{ me { urn } }", variables: { padding: "x".repeat(1_100_000) } }),
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(body.errors[0]?.extensions.code).toBe("BAD_USER_INPUT");
  });

  it("round-trips a truncation job: the worker deletes the old rows only and completes the task row", async () => {
    const taskId = uniqueName("task");
    const cutoff = 1_700_000_000_000;
    const rows = [cutoff - 2000, cutoff - 1000, cutoff, cutoff + 1000].map((t, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:hive,t${i},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t, rowCount: i }),
    }));
    const store = new TimeseriesStore(database.pool);
    await store.prepare([{ ...PROFILE, rows }]);
    await inTransaction(database.pool, (client) => store.append(client, PROFILE, rows));
    await prisma.task.create({ data: { id: taskId, type: "TRUNCATE_TIMESERIES", request: {}, createdBy: ADMIN } });

    const producer = new Producer("truncate", redis, prefix);
    const eventsConnection = redis.duplicate(); // QueueEvents blocks on its connection, so it gets its own
    const events = new QueueEvents(QUEUE_NAMES.truncate, { connection: eventsConnection, prefix });
    await events.waitUntilReady();
    const job = await producer.enqueue(taskId, {
      taskId,
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: cutoff,
      batchSize: 1,
    });
    await expect(job.waitUntilFinished(events, 15_000)).resolves.toMatchObject({
      deleted: 2,
      batches: 2,
      partitionsDropped: 0,
    });
    await Promise.all([producer.close(), events.close()]);
    await eventsConnection.quit();

    const left = await store.values(PROFILE, rows[2]!.urn, { limit: 10 });
    expect(left.map((r) => r.timestampMillis)).toEqual([cutoff]);
    expect((await store.partitions(PROFILE)).map((p) => p.rowCount)).toEqual([2]);
    const task = await prisma.task.findUniqueOrThrow({ where: { id: taskId } });
    expect(task).toMatchObject({ state: "completed", progress: { deleted: 2, toDelete: 2, batches: 2, percent: 100 } });
    expect(task.finishedAt).not.toBeNull();
  });

  it("round-trips an evaluation: ingest, define a test, evaluate with push through the worker, read the results", async () => {
    const asAdmin = { "content-type": "application/json", authorization: systemClient, "x-platform-actor": ADMIN };
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)";
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${baseUrl}${path}`, { method: "POST", headers: asAdmin, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const proposal = {
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description: "orders" }) },
    };
    expect((await post("/gms/aspects?action=ingestProposal", { proposal })).status).toBe(200);
    const created = await post("/api/graphql", {
      query: `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      variables: {
        input: {
          id: "described",
          name: "Has a description",
          category: "Documentation",
          definition: {
            json: "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: exists}]",
          },
        },
      },
    });
    expect(created.body).toEqual({ data: { createTest: "urn:li:test:described" } });

    const evaluated = await post("/gms/test?action=evaluate", { urn, push: true });
    expect(evaluated).toMatchObject({
      status: 200,
      body: {
        value: { urn, passing: [{ test: "urn:li:test:described", type: "SUCCESS" }], failing: [], notApplicable: [] },
      },
    });
    const entity = await fetch(`${baseUrl}/gms/entities/${encodeURIComponent(urn)}`, { headers: asAdmin });
    expect(
      ((await entity.json()) as { value: { aspects: Record<string, unknown> } }).value.aspects.testResults,
    ).toEqual({ passing: [{ test: "urn:li:test:described", type: "SUCCESS" }], failing: [] });
  });

  it("refuses to start a second gateway on a port in use, saying so and what to do, without a stack trace", async () => {
    const second = startService("gateway", {
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      PORT: new URL(baseUrl).port,
    });
    expect(await second.stop("SIGCONT")).toBe(1); // waits for its own exit: SIGCONT does nothing
    expect(second.output()).toContain(
      `gateway failed to start: 127.0.0.1:${new URL(baseUrl).port} is in use by another process: stop it, or set PORT to a free port`,
    );
    expect(second.output()).not.toMatch(/Unhandled 'error' event|^\s+at /m);
  });

  it("says at start that PostgreSQL cannot be reached, rather than starting as if healthy", async () => {
    const unreachable = `postgresql://postgres@127.0.0.1:${await freePort()}/nowhere`;
    const port = await freePort();
    const lonely = startService("gateway", {
      DATABASE_URL: unreachable,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      PORT: String(port),
    });
    try {
      await waitForOutput(lonely, "not ready yet");
      expect(lonely.output()).toContain('"postgres":"unreachable"');
      expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(503);
    } finally {
      await lonely.stop();
    }
  });

  it("stops every process cleanly on SIGTERM", async () => {
    const codes = await Promise.all(services.map((s) => s.stop("SIGTERM")));
    expect(codes).toEqual([0, 0, 0]);
    expect(gateway.output()).toContain('"msg":"stopped"');
  });
});
