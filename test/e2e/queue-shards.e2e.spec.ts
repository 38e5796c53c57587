/**
 * The evaluate queue split into QUEUE_SHARDS=3 shards on a Redis Cluster of the test's own (3 masters,
 * scripts/redis-cluster.ts: a private one, so that no other test's traffic counts in its masters' statistics): under
 * evaluate load through the real gateway and evaluation worker, every request gets its own answer, and the calls
 * each master served (its own `INFO commandstats`) are spread over the three, the busiest carrying well under what
 * one master carried when every queue shared one hash tag (all of it).
 */
import path from "node:path";
import Redis from "ioredis";
import { createTestDatabase } from "@mdp/db/testing";
import { startRedisCluster, type RedisCluster } from "../../scripts/redis-cluster";
import {
  queuePrefix,
  startService,
  systemClient,
  gatewayUrl,
  waitFor,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const headers = systemClient(); // never rate-limited: only the queues' and replies' commands
const ENTITIES = 30;
const REQUESTS = 300;
const IN_FLIGHT = 12;
const urnOf = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,shards.t${i},PROD)`;

/** Commands each node served so far, less those of this test's own reading and of the cluster's bookkeeping. */
async function callsOf(port: number): Promise<number> {
  const node = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
  try {
    await node.connect();
    const text = await node.info("commandstats");
    let calls = 0;
    for (const [, command, n] of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (command === "info" || command!.startsWith("cluster") || command === "ping") continue;
      calls += Number(n);
    }
    return calls;
  } finally {
    node.disconnect();
  }
}

describe("the evaluate queue in shards over a Redis Cluster's masters", () => {
  let cluster: RedisCluster;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let baseUrl: string;
  const services: RunningService[] = [];

  const post = async (route: string, body: unknown) => {
    const res = await fetch(`${baseUrl}${route}`, { method: "POST", headers, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    cluster = await startRedisCluster(path.resolve(__dirname, "..", "..", ".data"), {
      name: `queue-shards-${process.pid}`,
    });
    db = await createTestDatabase("e2e_queue_shards");
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: cluster.url,
      QUEUE_PREFIX: queuePrefix("e2e-shards"),
      QUEUE_SHARDS: "3",
      PORT: "0",
    };
    const gateway = startService("gateway", env);
    const worker = startService("evaluation-worker", env);
    services.push(gateway, worker);
    baseUrl = await gatewayUrl(gateway, 100_000);
    await waitUntilReady(baseUrl, gateway);
    await waitFor("the evaluation worker to run", async () => worker.output().includes("worker running"), 100_000);
    const proposals = Array.from({ length: ENTITIES }, (_, i) => ({
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
    const created = await post("/api/graphql", {
      query: `mutation ($input: CreateTestInput!) { createTest(input: $input) }`,
      variables: {
        input: { id: "shards-described", name: "described", category: "Quality", definition: { json: definition } },
      },
    });
    expect(created.body).toEqual({ data: { createTest: "urn:li:test:shards-described" } });
  }, 150_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await db?.drop();
    await cluster?.stop();
  });

  it("answers every evaluate and spreads the queue's commands over the 3 masters", async () => {
    const before = await Promise.all(cluster.ports.map(callsOf));
    let next = 0;
    const wrong: string[] = [];
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < REQUESTS) {
          const i = next++ % ENTITIES;
          const answer = await post("/gms/test?action=evaluate", { urn: urnOf(i) });
          const passing = i % 2 === 0;
          const expected = passing ? "passing" : "failing";
          const value = answer.body.value as Record<string, Array<{ test: string }>> | undefined;
          if (answer.status !== 200 || value?.[expected]?.[0]?.test !== "urn:li:test:shards-described") {
            wrong.push(`${urnOf(i)}: ${answer.status} ${JSON.stringify(answer.body)}`);
          }
        }
      }),
    );
    expect(wrong).toEqual([]);
    const after = await Promise.all(cluster.ports.map(callsOf));
    const served = after.map((n, i) => n - before[i]!);
    const total = served.reduce((a, b) => a + b, 0);
    const busiest = Math.max(...served) / total;
    process.stdout.write(`calls per master under ${REQUESTS} evaluates: ${served.join(", ")}; busiest ${busiest}\n`);
    // at least a few commands per evaluate reached the cluster, and no master carried most of them
    expect(total).toBeGreaterThan(REQUESTS);
    expect(busiest).toBeLessThan(0.6);
    expect(Math.min(...served) / total).toBeGreaterThan(0.15);
  }, 120_000);

  it("shows each shard on the queue dashboard, each with jobs of its own, retrying none", async () => {
    const created = await post("/api/graphql", {
      query: `mutation ($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
      variables: { i: { type: "PERSONAL", actorUrn: "urn:li:corpuser:admin", duration: "ONE_HOUR", name: "board" } },
    });
    const token = (created.body.data as { createAccessToken: { accessToken: string } }).createAccessToken.accessToken;
    const shards = ["evaluate-tests", "evaluate-tests-1", "evaluate-tests-2"];
    for (const name of shards) {
      const res = await fetch(`${baseUrl}/admin/queues/api/queues?activeQueue=${name}&status=completed`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      const { queues } = (await res.json()) as {
        queues: Array<{ name: string; jobs: Array<{ id: string }>; counts: Record<string, number> }>;
      };
      expect(queues.map((q) => q.name)).toEqual(expect.arrayContaining(shards));
      const shard = queues.find((q) => q.name === name)!;
      expect(shard.counts.completed).toBeGreaterThan(0);
      expect(shard.jobs.length).toBeGreaterThan(0);
    }
    // a shard is its queue: the dashboard retries no evaluate job, whichever shard holds it
    const retry = await fetch(`${baseUrl}/admin/queues/api/queues/evaluate-tests-2/retry/failed`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(retry.status).toBe(403);
  });
});
