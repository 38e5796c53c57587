/**
 * N × M replicas, as processes on one PostgreSQL and one Redis (a Redis Cluster under `pnpm test:cluster`): three
 * gateways, two truncation workers and two evaluation workers. A revocation through one gateway holds on all three
 * within a second; evaluate requests spread over the gateways each get their own answers; concurrent truncations of
 * different aspects run on different workers, each once, with exact counts; a truncation worker killed with SIGKILL
 * mid-task is replaced by the other without loss; the evaluation workers share the change stream's partitions, and one
 * killed has its partitions taken over by the other, every change evaluated. Which worker ran a task is read from its row (lease_owner names the
 * worker process: host:pid:random).
 */
import { aspectTableName, bulkLoad, createDatabase, DAY_MILLIS, qualified, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import {
  gatewayUrl,
  monitorUrl,
  queuePrefix,
  startService,
  systemClient,
  waitFor,
  type RunningService,
} from "../support/services";

const ROOT = "urn:li:corpuser:admin";
const ALICE = "urn:li:corpuser:alice";
const DAY = Date.UTC(2026, 4, 1);
/** rows per aspect, all in one day: truncation deletes them in batches (a whole-partition drop would be instant) */
const ROWS = 40_000;
const ASPECTS = ["datasetProfile", "datasetUsageStatistics"] as const;
/** the evaluation workers' lease on their partitions of the change stream (ON_CHANGE_LEASE_MS) */
const LEASE_MS = 4_000;

interface TaskStatus {
  state: string;
  attemptsMade: number;
  failedReason: string | null;
  progress: { deleted: number; toDelete: number; percent: number };
}

describe("3 gateways × 2 truncation workers × 2 evaluation workers", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  const gateways: Array<{ url: string; service: RunningService }> = [];
  const truncationWorkers: RunningService[] = [];
  const evaluationWorkers: RunningService[] = [];

  const post = async (gateway: number, path: string, body: unknown, headers = systemClient(ROOT)) => {
    const res = await fetch(`${gateways[gateway]!.url}${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { value?: unknown; data?: unknown; errors?: unknown } };
  };
  const graphql = (gateway: number, query: string, variables: unknown, headers = systemClient(ROOT)) =>
    post(gateway, "/api/graphql", { query, variables }, headers);
  const status = async (taskId: string, gateway = 2) =>
    (await post(gateway, "/gms/operations?action=getTaskStatus", { taskId })).body.value as TaskStatus;
  const ended = (taskId: string, timeoutMs: number) =>
    waitFor(
      `task ${taskId} to end`,
      async () => ["completed", "failed", "cancelled"].includes((await status(taskId)).state),
      timeoutMs,
    );
  /** which truncation worker process a task row names as the one that ran (or runs) it */
  const ranOn = async (taskId: string) => {
    const { rows } = await database.pool.query<{ owner: string | null }>(
      "SELECT lease_owner AS owner FROM task WHERE id = $1",
      [taskId],
    );
    const owner = rows[0]?.owner ?? "";
    return truncationWorkers.find((w) => owner.includes(`:${w.process.pid}:`));
  };

  const table = (aspect: string) => qualified(aspectTableName("dataset", aspect));
  /** ROWS fresh rows of `aspect` over one day; returns how many lie before `cutoff` */
  const load = async (aspect: string, cutoff: number) => {
    // its partitions' bookkeeping goes with it (ON DELETE CASCADE)
    await database.pool.query("DELETE FROM timeseries.aspect_table WHERE table_name = $1", [
      aspectTableName("dataset", aspect),
    ]);
    await database.pool.query(`DROP TABLE IF EXISTS ${table(aspect)}`);
    await bulkLoad(database.pool, {
      entityType: "dataset",
      aspectName: aspect,
      rows: ROWS,
      days: 1,
      endMillis: DAY,
      urns: 40,
    });
    return (await remaining(aspect, cutoff)).older;
  };
  const remaining = async (aspect: string, cutoff: number) => {
    const { rows } = await database.pool.query<{ older: string; newer: string }>(
      `SELECT count(*) FILTER (WHERE timestamp_millis < $1) AS older,
              count(*) FILTER (WHERE timestamp_millis >= $1) AS newer FROM ${table(aspect)}`,
      [cutoff],
    );
    return { older: Number(rows[0]!.older), newer: Number(rows[0]!.newer) };
  };
  const truncate = async (gateway: number, aspect: string, cutoff: number, batchSize: number) => {
    const res = await post(gateway, "/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect,
      endTimeMillis: cutoff,
      dryRun: false,
      batchSize,
    });
    expect(res.status).toBe(200);
    return res.body.value as string;
  };

  beforeAll(async () => {
    db = await createTestDatabase("e2e_scale_out");
    database = createDatabase(db.url);
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: process.env.REDIS_URL || "redis://127.0.0.1:6379",
      QUEUE_PREFIX: queuePrefix("e2e-scale-out"),
      // the workers' monitoring ports, where they have them: any free one, as 4 workers share this machine
      TRUNCATION_WORKER_PORT: "0",
      EVALUATION_WORKER_PORT: "0",
      ON_CHANGE_LEASE_MS: String(LEASE_MS),
    };
    // PORT=0 and the port read from its log: seven processes start at once, and a port found free beforehand can be
    // taken by a worker's monitoring port before the gateway binds it (a 405 from the monitor, once, on CI).
    const starting = Array.from({ length: 3 }, () => startService("gateway", { ...env, PORT: "0" }));
    for (let i = 0; i < 2; i++) {
      truncationWorkers.push(startService("truncation-worker", env));
      evaluationWorkers.push(startService("evaluation-worker", env));
    }
    // Seven processes starting at once on a shared 2-core machine: each may take much longer than alone.
    const started = (service: RunningService, what: string, check: () => Promise<boolean>) =>
      waitFor(what, check, 100_000).catch((error: Error) => {
        throw new Error(`${error.message}\n${service.output()}`);
      });
    for (const service of starting) gateways.push({ url: await gatewayUrl(service, 100_000), service });
    await Promise.all([
      ...gateways.map((g) =>
        started(g.service, `${g.url}/ready`, async () => (await fetch(`${g.url}/ready`)).status === 200),
      ),
      ...[...truncationWorkers, ...evaluationWorkers].map((w) =>
        started(w, `${w.name} to run`, async () => w.output().includes("worker running")),
      ),
    ]);
  }, 150_000);

  afterAll(async () => {
    await Promise.all(
      [...gateways.map((g) => g.service), ...truncationWorkers, ...evaluationWorkers].map((s) => s.stop()),
    );
    await database?.close();
    await db?.drop();
  });

  it("enforces a revocation made through one gateway on all three within 1 s", async () => {
    const created = await graphql(
      0,
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
      { i: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_HOUR", name: "scale-out" } },
    );
    const { accessToken, metadata } = (
      created.body.data as { createAccessToken: { accessToken: string; metadata: { id: string } } }
    ).createAccessToken;
    const bearer = { "content-type": "application/json", authorization: `Bearer ${accessToken}` };
    const me = (gateway: number) => graphql(gateway, "{ me { urn } }", {}, bearer);
    // every gateway verifies (and caches) the token first
    for (const g of [0, 1, 2]) expect((await me(g)).status).toBe(200);

    const revokedAt = Date.now();
    const revoked = await graphql(1, `mutation { revokeAccessToken(tokenId: "${metadata.id}") }`, {});
    expect(revoked.body.data).toEqual({ revokeAccessToken: true });
    const enforcedAfter = await Promise.all(
      [0, 1, 2].map(async (g) => {
        await waitFor(`gateway ${g} to refuse the revoked token`, async () => (await me(g)).status === 401, 5_000);
        return Date.now() - revokedAt;
      }),
    );
    for (const ms of enforcedAfter) expect(ms).toBeLessThan(1_000);
  });

  it("gives every evaluate request its own answer, spread over the three gateways", async () => {
    const urns = Array.from({ length: 18 }, (_, i) => `urn:li:dataset:(urn:li:dataPlatform:hive,scale.t${i},PROD)`);
    const proposals = urns.map((urn, i) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      // every third entity lacks a description, so the answers differ from one entity to the next
      aspect: { contentType: "application/json", value: JSON.stringify(i % 3 === 2 ? {} : { description: `t${i}` }) },
    }));
    expect((await post(0, "/gms/aspects?action=ingestProposalBatch", { proposals })).status).toBe(200);
    const created = await graphql(
      1,
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "scale-described",
          name: "Has a description",
          category: "Documentation",
          definition: {
            json: '{"on": {"types": ["dataset"]}, "rules": {"property": "datasetProperties.description", "operator": "exists"}}',
          },
        },
      },
    );
    expect(created.body.data).toEqual({ createTest: "urn:li:test:scale-described" });

    // all at once, request i through gateway i % 3: each gateway waits for replies to its own requests only
    const answers = await Promise.all(urns.map((urn, i) => post(i % 3, "/gms/test?action=evaluate", { urn })));
    answers.forEach((answer, i) => {
      const passing = i % 3 !== 2;
      expect(answer).toMatchObject({
        status: 200,
        body: {
          value: {
            urn: urns[i],
            passing: passing ? [{ test: "urn:li:test:scale-described" }] : [],
            failing: passing ? [] : [{ test: "urn:li:test:scale-described" }],
          },
        },
      });
    });
  });

  it("runs concurrent truncations of different aspects on different workers, each once, with exact counts", async () => {
    const cutoff = DAY + Math.floor((3 * DAY_MILLIS) / 4);
    const toGo = await Promise.all(ASPECTS.map((aspect) => load(aspect, cutoff)));
    // Each worker runs one truncation at a time (TRUNCATION_CONCURRENCY=1): the second task goes to the idle one.
    const taskIds = [await truncate(0, ASPECTS[0], cutoff, 500), await truncate(1, ASPECTS[1], cutoff, 500)];
    await Promise.all(taskIds.map((id) => ended(id, 60_000)));

    for (const [i, taskId] of taskIds.entries()) {
      expect(await status(taskId)).toMatchObject({
        state: "completed",
        attemptsMade: 1, // claimed once: done exactly once
        progress: { deleted: toGo[i], toDelete: toGo[i], percent: 100 },
      });
      expect(await remaining(ASPECTS[i]!, cutoff)).toEqual({ older: 0, newer: ROWS - toGo[i]! });
    }
    const workers = await Promise.all(taskIds.map(ranOn));
    expect(workers.every(Boolean)).toBe(true);
    expect(workers[0]).not.toBe(workers[1]);
  }, 90_000);

  it("replaces a truncation worker killed mid-task with the other, losing nothing", async () => {
    const cutoff = DAY + Math.floor((2 * DAY_MILLIS) / 3);
    const toGo = await load(ASPECTS[0], cutoff);
    const taskId = await truncate(2, ASPECTS[0], cutoff, 250);
    await waitFor(
      "the truncation to be under way",
      async () => {
        const s = await status(taskId);
        return s.state === "active" && s.progress.deleted > 0;
      },
      30_000,
    );
    const victim = await ranOn(taskId);
    expect(victim).toBeDefined();
    victim!.process.kill("SIGKILL");
    const survivor = truncationWorkers.find((w) => w !== victim)!;
    expect((await status(taskId)).progress.deleted).toBeLessThan(toGo);

    // the dead worker's lease lapses (10 s) and BullMQ's stall check hands its job to the survivor
    await ended(taskId, 60_000);
    expect(await status(taskId)).toMatchObject({
      state: "completed",
      attemptsMade: 2,
      progress: { deleted: toGo, toDelete: toGo, percent: 100 },
    });
    expect(await remaining(ASPECTS[0], cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
    expect(await ranOn(taskId)).toBe(survivor);
  }, 90_000);

  it("shares the change stream's partitions between the evaluation workers, and hands a killed one's to the other", async () => {
    const held = async (worker: RunningService) => {
      const text = await (await fetch(`${await monitorUrl(worker)}/metrics`)).text();
      return Number(/^mdp_on_change_partitions_held (\d+)/m.exec(text)?.[1] ?? -1);
    };
    const [victim, survivor] = evaluationWorkers as [RunningService, RunningService];
    await waitFor(
      "each evaluation worker to hold half the partitions",
      async () => (await held(victim)) === 4 && (await held(survivor)) === 4,
      30_000,
    );
    const created = await graphql(
      0,
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "spread",
          name: "spread",
          category: "Quality",
          definition: {
            json: JSON.stringify({
              on: { types: ["dataset"] },
              rules: { property: "datasetProperties.description", operator: "exists" },
            }),
          },
        },
      },
    );
    expect(created.body.errors).toBeUndefined();
    victim.process.kill("SIGKILL");
    const killedAt = performance.now();
    const urns = Array.from({ length: 40 }, (_, i) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.spread${i},PROD)`);
    const proposals = urns.map((urn) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description: "spread" }) },
    }));
    expect((await post(1, "/gms/aspects?action=ingestProposalBatch", { proposals })).status).toBe(200);
    await waitFor("the survivor to hold every partition", async () => (await held(survivor)) === 8, 30_000);
    const takeoverMs = performance.now() - killedAt;
    // Within its lease and a claim round or two (on a busy machine): not the lease times the partitions.
    expect(takeoverMs).toBeLessThan(LEASE_MS * 3);
    await waitFor(
      "every change evaluated",
      async () => {
        const { rows } = await database.pool.query<{ n: number }>(
          `SELECT count(DISTINCT urn)::int AS n FROM aspect
            WHERE aspect_name = 'testResults' AND urn = ANY($1) AND value::text LIKE '%urn:li:test:spread%'`,
          [urns],
        );
        return rows[0]!.n === urns.length;
      },
      30_000,
    );
  }, 90_000);
});
