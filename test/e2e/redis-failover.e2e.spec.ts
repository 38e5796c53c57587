/**
 * Evaluate callers across a Redis Cluster failover, with the real gateway and evaluation worker on a Redis Cluster of
 * the test's own (3 masters, a replica each, scripts/redis-cluster.ts): the master holding the queue's and the reply
 * channel's slot is killed (SIGKILL) under evaluate load. Every caller in flight must be answered well before the
 * gateway's 30 s wait: 200 with its results (from its reply, or from the answer its worker kept when the reply found
 * no subscriber), or a clear 503, or a 504 naming a task id. Until the gateway read the kept answers, they waited the
 * full 30 s for a 504 although their results were in the task rows a second after the kill.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { startRedisCluster, type RedisCluster } from "../../scripts/redis-cluster";
import {
  freePort,
  queuePrefix,
  startService,
  systemClient,
  waitFor,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const headers = systemClient();
/** entities per request: enough work that requests are in flight when the master dies */
const URNS = 40;
const CALLERS = 6;
/** How long after the kill every caller in flight must have its answer (the gateway's wait is 30 s). */
const ANSWER_BOUND_MS = 12_000;
const urnOf = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,failover.t${String(i).padStart(4, "0")},PROD)`;

interface Call {
  startedAt: number;
  answeredAt?: number;
  status?: number;
  body?: { value?: { results?: Record<string, unknown> }; code?: string; taskId?: string };
}

describe("evaluate across a Redis Cluster failover", () => {
  let cluster: RedisCluster;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let baseUrl: string;
  let prefix: string;
  const services: RunningService[] = [];

  const redisCli = (port: number, ...args: string[]) => {
    const run = spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" });
    if (run.status !== 0 || run.error) throw new Error(`redis-cli ${args.join(" ")}: ${run.stderr} ${run.error}`);
    return run.stdout;
  };
  const killed = new Set<number>();
  /** The port of the master serving `key`'s slot, as a node still running says now. */
  const masterOf = (key: string) => {
    const asked = cluster.ports.find((port) => !killed.has(port))!;
    const slot = Number(redisCli(asked, "cluster", "keyslot", key).trim());
    for (const line of redisCli(asked, "cluster", "nodes").split("\n")) {
      const [, address, flags, , , , , , ...slots] = line.split(" ");
      if (!flags?.includes("master") || flags.includes("fail")) continue;
      const serves = slots.some((range) => {
        const [from, to = from] = range.split("-").map(Number);
        return slot >= from! && slot <= to!;
      });
      if (serves) return Number(address!.split("@")[0]!.split(":")[1]);
    }
    throw new Error(`no master serves slot ${slot}`);
  };
  const batchEvaluate = async (urns: string[]): Promise<Pick<Call, "status" | "body">> => {
    const res = await fetch(`${baseUrl}/gms/test?action=batchEvaluate`, {
      method: "POST",
      headers,
      body: JSON.stringify({ urns, testUrns: ["urn:li:test:failover-described"] }),
    });
    return { status: res.status, body: (await res.json()) as Call["body"] };
  };

  beforeAll(async () => {
    cluster = await startRedisCluster(path.resolve(__dirname, "..", "..", ".data"), {
      replicas: 1,
      nodeTimeoutMs: 1_000,
      name: `redis-failover-${process.pid}`,
    });
    db = await createTestDatabase("e2e_redis_failover");
    database = createDatabase(db.url);
    await database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       SELECT 'urn:li:dataset:(urn:li:dataPlatform:hive,failover.t' || lpad(i::text, 4, '0') || ',PROD)',
              'datasetProperties', 0, 'dataset',
              CASE WHEN i % 2 = 0 THEN '{"description": "even"}' ELSE '{"name": "odd"}' END::jsonb,
              'urn:li:corpuser:admin'
         FROM generate_series(0, $1::int - 1) AS i`,
      [URNS * CALLERS],
    );
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    prefix = queuePrefix("e2e-failover");
    const env = { DATABASE_URL: db.url, REDIS_URL: cluster.url, QUEUE_PREFIX: prefix, PORT: String(port) };
    const gateway = startService("gateway", env);
    const worker = startService("evaluation-worker", env);
    services.push(gateway, worker);
    await waitUntilReady(baseUrl, gateway);
    await waitFor("the evaluation worker to run", async () => worker.output().includes("worker running"), 60_000);
    const definition = JSON.stringify({
      on: { types: ["dataset"] },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
    const created = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        query: `mutation ($input: CreateTestInput!) { createTest(input: $input) }`,
        variables: {
          input: { id: "failover-described", name: "described", category: "Quality", definition: { json: definition } },
        },
      }),
    });
    expect(await created.json()).toEqual({ data: { createTest: "urn:li:test:failover-described" } });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await database?.close();
    await db?.drop();
    await cluster?.stop();
  });

  it("answers every caller in flight at a master's death within seconds, from its reply or the answer kept", async () => {
    // Warm: every caller's request answered before the fault.
    for (let c = 0; c < CALLERS; c++) {
      const urns = Array.from({ length: URNS }, (_, i) => urnOf(c * URNS + i));
      expect((await batchEvaluate(urns)).status).toBe(200);
    }
    const calls: Call[] = [];
    const fault: { at?: number } = {};
    const loops = Array.from({ length: CALLERS }, async (_, c) => {
      const urns = Array.from({ length: URNS }, (_, i) => urnOf(c * URNS + i));
      // Each caller asks again and again until the kill: its request in flight then is the one that matters.
      while (fault.at === undefined) {
        const call: Call = { startedAt: Date.now() };
        calls.push(call);
        Object.assign(call, await batchEvaluate(urns).catch(() => ({ status: -1 })), { answeredAt: Date.now() });
      }
    });
    await waitFor("evaluate load", async () => calls.filter((c) => c.status === 200).length >= CALLERS * 2, 30_000);
    const victim = masterOf(prefix);
    const killedAt = (fault.at = Date.now());
    killed.add(victim);
    cluster.kill(victim);
    await Promise.all(loops);

    const inFlight = calls.filter((c) => c.startedAt < killedAt && (c.answeredAt ?? Infinity) > killedAt);
    expect(inFlight.length).toBeGreaterThan(0);
    const logs = () => services.map((s) => `--- ${s.name}\n${s.output().slice(-3000)}`).join("\n");
    for (const call of inFlight) {
      const after = call.answeredAt! - killedAt;
      const summary = `${call.status} after ${after} ms: ${JSON.stringify(call.body).slice(0, 300)}\n${logs()}`;
      expect({ after: after < ANSWER_BOUND_MS, summary }).toEqual({ after: true, summary });
      if (call.status === 200) {
        expect(Object.keys(call.body!.value!.results!)).toHaveLength(URNS);
      } else if (call.status === 504) {
        expect(call.body).toMatchObject({ code: "GATEWAY_TIMEOUT", taskId: expect.any(String) });
      } else {
        expect({ status: call.status, code: call.body?.code, summary }).toEqual({
          status: 503,
          code: "SERVICE_UNAVAILABLE",
          summary,
        });
      }
    }
    // The replica took over: evaluations are answered again.
    let lastAnswer: Pick<Call, "status" | "body"> | undefined;
    await waitFor(
      "evaluations answered after the failover",
      async () => (lastAnswer = await batchEvaluate([urnOf(0)])).status === 200,
      30_000,
    ).catch((error: Error) => {
      // Which answer it kept giving, and what the services said: the failure's cause, not only its symptom.
      throw new Error(`${error.message}; last answer ${JSON.stringify(lastAnswer).slice(0, 500)}\n${logs()}`);
    });
    expect(masterOf(prefix)).not.toBe(victim);
  }, 120_000);
});
