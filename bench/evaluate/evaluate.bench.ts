/**
 * bench/evaluate, through the real gateway and evaluation-worker processes:
 * - POST /gms/test?action=evaluate running 10 tests on one entity, 50 concurrent callers: p50, p99 and throughput,
 *   against a bare BullMQ round trip (Queue.add + Job.waitUntilFinished of a no-op job, worker in its own process with
 *   the same concurrency) measured in the same run, rounds interleaved. Targets (GOALS below): p50 <=
 *   bare + 4 ms and throughput >= 0.6x at 50 callers, p50 <= bare + 0.8 ms for one caller at a time.
 *   Also reported, not targets: the same round trip behind a bare express route (http-floor-server.ts), the part of
 *   that distance any HTTP service has to travel; and behind a bare express route that batches requests as the gateway
 *   does, how far batching alone can go.
 * - runTest over 100,000 entities (with and without push): entities per second against the same aspects read in
 *   batches and evaluated in-process; goals >= 0.8x without push, >= 0.5x with it.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import http from "node:http";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Queue, QueueEvents } from "bullmq";
import { Cluster } from "ioredis";
import { createDatabase } from "@mdp/db";
import { definitionFromJson, evaluateEntity } from "@mdp/metadata-tests";
import { createTestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, jobOptions, type RedisConnection } from "@mdp/queues";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { productionSetup } from "../support/production";
import { spawnBenchProcess } from "../support/bench-process";
import { printReport } from "../support/report";
import { closedLoop, median, type LoopResult } from "./closed-loop";

const CONCURRENCY = 50;
const WORKER_CONCURRENCY = 8; // EVALUATION_CONCURRENCY's default, for both workers
const ROUNDS = Number(process.env.BENCH_EVALUATE_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_EVALUATE_SECONDS ?? 4);
const ENTITIES = Number(process.env.BENCH_EVALUATE_ENTITIES ?? 100_000);
const ADMIN = "urn:li:corpuser:admin";
/** The hot paths' goals, each against its floor of the same run (bench/README.md "evaluate: evaluate and runTest"). */
const GOALS = {
  p50OverBareMs: 4,
  throughput: 0.6,
  oneCallerOverBareMs: 0.8,
  runTestWithoutPush: 0.8,
  runTestWithPush: 0.5,
} as const;
export const ENTITY = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

export async function benchEvaluate(): Promise<void> {
  const db = await createTestDatabase("bench_evaluate");
  const database = createDatabase(db.url);
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const [port, floorPort] = [await freePort(), await freePort()];
  const baseUrl = `http://127.0.0.1:${port}`;
  const prefix = uniqueName("bench-evaluate");
  // The system client names the caller (its secret is a constant-time compare); bench/tokens measures bearer tokens.
  const production = productionSetup();
  const env = {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
  };
  const gateway = startService("gateway", { ...env, LOG_LEVEL: "warn" });
  const worker = startService("evaluation-worker", {
    ...env,
    LOG_LEVEL: "info", // as operators run it (two lines per job); "worker running" says it is ready
    EVALUATION_CONCURRENCY: String(WORKER_CONCURRENCY),
  });
  const queueEnv = { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, QUEUE_NAME: "noop" };
  const noop = spawnBenchProcess(path.join(__dirname, "noop-worker.ts"), {
    ...queueEnv,
    CONCURRENCY: String(WORKER_CONCURRENCY),
  });
  const floor = spawnBenchProcess(path.join(__dirname, "http-floor-server.ts"), {
    ...queueEnv,
    PORT: String(floorPort),
  });
  const redis = createRedis(redisUrl, "worker");
  const eventsConnection = createRedis(redisUrl, "worker");
  const queue = new Queue("noop", { connection: redis, prefix });
  const events = new QueueEvents("noop", { connection: eventsConnection, prefix });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitForOutput(worker, "worker running"),
      waitForProcessOutput(noop, "noop worker running"),
      waitForProcessOutput(floor, "http floor server listening"),
      events.waitUntilReady(),
    ]);
    const api = apiClient(baseUrl, agent, production.systemClient(ADMIN));
    await seedOneEntityAndTenTests(api);

    const sample = (await api.post("/gms/test?action=evaluate", { urn: ENTITY })) as {
      passing: unknown[];
      failing: unknown[];
    };
    process.stdout.write(
      `\nbench/evaluate: 10 tests on one entity (${sample.passing.length} pass, ${sample.failing.length} fail with failedRules)\n`,
    );

    queue.setMaxListeners(0); // Job.waitUntilFinished listens on the queue once per waiting job
    const bare = async () => {
      const job = await queue.add("noop", {}, jobOptions("evaluate", randomUUID()));
      await job.waitUntilFinished(events, 30_000);
    };
    const body = JSON.stringify({ urn: ENTITY });
    const evaluate = () => api.raw("/gms/test?action=evaluate", body);
    // A JSON content type, so that express.json reads and parses the body as it does in the gateway.
    const floorApi = apiClient(`http://127.0.0.1:${floorPort}`, agent, { "content-type": "application/json" });
    const httpFloor = () => floorApi.raw("/noop", "{}");
    const batchedFloor = () => floorApi.raw("/batched", "{}");
    const targets = { bare, evaluate, httpFloor, batchedFloor };

    if (ROUNDS > 0) {
      // Warm-up (JIT, connection pools, PostgreSQL caches), then interleaved rounds so drift reaches both alike.
      for (const call of Object.values(targets)) await closedLoop(CONCURRENCY, 2, call);
      const names = Object.keys(targets) as Array<keyof typeof targets>;
      const runs: Runs = { bare: [], evaluate: [], httpFloor: [], batchedFloor: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + round) % names.length]!; // the order rotated every round
          runs[name].push(await closedLoop(CONCURRENCY, SECONDS, targets[name]));
        }
      }
      reportLatency(runs);
      // Not a target: what one request costs on an otherwise idle path, where batching has nothing to share.
      const alone: Runs = { bare: [], evaluate: [], httpFloor: [], batchedFloor: [] };
      for (let round = 0; round < 3; round++) {
        for (const name of names) alone[name].push(await closedLoop(1, 2, targets[name]));
      }
      const p50 = (xs: LoopResult[]) => median(xs.map((r) => r.p50Ms));
      const over = (xs: LoopResult[]) => `${p50(xs).toFixed(2)} ms (+${(p50(xs) - p50(alone.bare)).toFixed(2)} ms)`;
      process.stdout.write(
        `  one caller at a time (medians of 3 runs of 2 s): bare p50 ${p50(alone.bare).toFixed(2)} ms, ` +
          `evaluate p50 ${over(alone.evaluate)}, http floor p50 ${over(alone.httpFloor)}, ` +
          `batched floor p50 ${over(alone.batchedFloor)}\n`,
      );
      const delta = p50(alone.evaluate) - p50(alone.bare);
      const delta50 = median(runs.evaluate.map((r) => r.p50Ms)) - median(runs.bare.map((r) => r.p50Ms));
      const throughput = median(runs.evaluate.map((r, i) => r.perSecond / runs.bare[i]!.perSecond));
      process.stdout.write(
        `  TARGET evaluate p50 at ${CONCURRENCY} callers: bare +${delta50.toFixed(2)} ms (target <= +${GOALS.p50OverBareMs} ms) ${delta50 <= GOALS.p50OverBareMs ? "MET" : "NOT MET"}\n` +
          `  TARGET evaluate throughput at ${CONCURRENCY} callers: ${throughput.toFixed(2)}x bare (target >= ${GOALS.throughput}) ${throughput >= GOALS.throughput ? "MET" : "NOT MET"}\n` +
          `  TARGET evaluate p50, one caller: bare +${delta.toFixed(2)} ms (target <= +${GOALS.oneCallerOverBareMs} ms) ${delta <= GOALS.oneCallerOverBareMs ? "MET" : "NOT MET"}\n`,
      );
    }

    if (ENTITIES > 0) await benchRunTest(api, database.pool);
  } finally {
    agent.destroy();
    await events.close();
    await queue.close();
    await closeRedis(eventsConnection);
    noop.kill("SIGTERM");
    floor.kill("SIGTERM");
    await Promise.all([gateway.stop(), worker.stop()]);
    await removeKeys(redis, prefix); // hundreds of thousands of finished jobs, kept for a day otherwise
    await closeRedis(redis);
    await database.close();
    await db.drop();
  }
}

type Runs = Record<"bare" | "evaluate" | "httpFloor" | "batchedFloor", LoopResult[]>;

function reportLatency(runs: Runs): void {
  const stats = (xs: LoopResult[]) => ({
    rps: median(xs.map((r) => r.perSecond)),
    p50: median(xs.map((r) => r.p50Ms)),
    p99: median(xs.map((r) => r.p99Ms)),
  });
  const bare = stats(runs.bare);
  // Per round, paired with that round's bare run: the spread says how much the machine's noise moves the ratio.
  const paired = (xs: LoopResult[], pick: (r: LoopResult) => number) => {
    const ratios = xs.map((r, i) => pick(r) / pick(runs.bare[i]!));
    return { ratio: median(ratios), spread: { min: Math.min(...ratios), max: Math.max(...ratios) } };
  };
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const signed = (x: number) => `${x < 0 ? "−" : "+"}${Math.abs(x).toFixed(2)}`;
  const rows = (label: string, xs: LoopResult[], targets: boolean) => {
    const s = stats(xs);
    return [
      {
        name: `${label} p50`,
        value: `${ms(s.p50)} (bare ${signed(s.p50 - bare.p50)})`,
        ...paired(xs, (r) => r.p50Ms),
        target: targets ? `<= +${GOALS.p50OverBareMs} ms` : "-",
        met: !targets || s.p50 <= bare.p50 + GOALS.p50OverBareMs,
      },
      {
        name: `${label} p99`,
        value: `${ms(s.p99)} (bare ${signed(s.p99 - bare.p99)})`,
        ...paired(xs, (r) => r.p99Ms),
        target: "-",
        met: true,
      },
      {
        name: `${label} throughput`,
        value: `${s.rps.toFixed(0)} req/s`,
        ...paired(xs, (r) => r.perSecond),
        target: targets ? `>= ${GOALS.throughput}` : "-",
        met: !targets || paired(xs, (r) => r.perSecond).ratio >= GOALS.throughput,
      },
    ];
  };
  printReport(
    `bench/evaluate: ${CONCURRENCY} concurrent callers, ${ROUNDS} rounds of ${SECONDS} s (medians)`,
    `bare BullMQ round trip (add + waitUntilFinished, no-op worker, concurrency ${WORKER_CONCURRENCY}): ` +
      `${bare.rps.toFixed(0)} jobs/s, p50 ${ms(bare.p50)}, p99 ${ms(bare.p99)}`,
    [
      ...rows("evaluate", runs.evaluate, true),
      ...rows("http floor", runs.httpFloor, false),
      ...rows("batched floor", runs.batchedFloor, false),
    ],
  );
  process.stdout.write(
    "  http floor: the bare round trip behind a bare express route, no authentication, database or evaluation;\n" +
      "  batched floor: the same, the requests of one event-loop turn sharing one job, as the gateway batches them\n",
  );
}

/** runTest over ENTITIES datasets (three aspects each), once without and once with push. */
async function benchRunTest(api: ApiClient, pool: import("pg").Pool): Promise<void> {
  process.stdout.write(`\nbench/evaluate: loading ${ENTITIES} datasets (3 aspects each)...\n`);
  await loadDatasets(pool, ENTITIES);
  const urn = await createRunTestTest(api);
  const floor = await runTestFloor(pool, urn);
  process.stdout.write(
    `  floor (same aspects read from PostgreSQL in batches of ${RUN_BATCH}, evaluated in-process): ${floor.evaluated} entities in ${(floor.ms / 1000).toFixed(2)} s, ${floor.perThousandMs.toFixed(1)} ms per thousand, of which evaluating ${(floor.evaluateMs / (floor.evaluated / 1000)).toFixed(1)} ms\n`,
  );
  const floorRate = floor.evaluated / (floor.ms / 1000);
  const rows: Array<{ name: string; value: string; ratio: number; target: string; met: boolean }> = [];
  for (const push of [false, true]) {
    const taskId = (
      (await api.graphql(`mutation($urn: String!, $push: Boolean) { runTest(urn: $urn, push: $push) }`, {
        urn,
        push,
      })) as { runTest: string }
    ).runTest;
    const status = await waitForTask(api, taskId);
    const seconds = (status.finishedAt - status.startedAt) / 1000;
    const p = status.progress;
    const rate = p.evaluated / seconds;
    rows.push({
      name: `runTest, push ${push}`,
      value: `${rate.toFixed(0)} entities/s, ${((seconds * 1000) / (p.evaluated / 1000)).toFixed(1)} ms/thousand`,
      ratio: rate / floorRate,
      // The floor pushes nothing: push true's goal is lower by what the push itself must write.
      target: `>= ${push ? GOALS.runTestWithPush : GOALS.runTestWithoutPush}`,
      met: rate / floorRate >= (push ? GOALS.runTestWithPush : GOALS.runTestWithoutPush),
    });
    process.stdout.write(
      `  runTest push=${push}: ${p.evaluated} entities in ${seconds.toFixed(2)} s, ${p.batches} batches ` +
        `(${p.passing} passing, ${p.failing} failing, ${p.notApplicable} not applicable; pushed ${p.pushed})\n`,
    );
  }
  printReport(
    `bench/evaluate: runTest over ${ENTITIES} entities`,
    `the same aspects read straight from PostgreSQL in batches of ${RUN_BATCH} and evaluated in-process with @mdp/metadata-tests (no queue, threads or push): ${floorRate.toFixed(0)} entities/s, ${floor.perThousandMs.toFixed(1)} ms per thousand`,
    rows,
  );
}

/** runTest's batch size (DEFAULT_RUN_BATCH_SIZE of @mdp/queues). */
const RUN_BATCH = 1000;

/**
 * The runTest floor: the test's stored definition parsed once, then the entities its on.types names in urn order, in
 * batches of RUN_BATCH, each batch's latest aspects read by one statement and evaluated in this process. No queue,
 * task row, thread, lock or push.
 */
async function runTestFloor(
  pool: import("pg").Pool,
  testUrn: string,
): Promise<{ evaluated: number; ms: number; perThousandMs: number; evaluateMs: number }> {
  const started = performance.now();
  const { rows: stored } = await pool.query<{ definition: unknown; onTypes: string[] }>(
    `SELECT definition, on_types AS "onTypes" FROM metadata_test WHERE urn = $1`,
    [testUrn],
  );
  const test = { urn: testUrn, definition: definitionFromJson(stored[0]!.definition) };
  const onTypes = stored[0]!.onTypes;
  let lastUrn = "";
  let evaluated = 0;
  let outcomes = 0;
  let evaluateMs = 0;
  for (;;) {
    const { rows } = await pool.query<{ urn: string; entityType: string; aspects: Record<string, unknown> }>(
      `WITH batch AS (
         SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3)
       SELECT b.urn, min(l.entity_type) AS "entityType", json_object_agg(l.aspect_name, l.value) AS aspects
         FROM batch b CROSS JOIN LATERAL (
           SELECT DISTINCT ON (a.aspect_name) a.entity_type, a.aspect_name, a.value
             FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l
        GROUP BY b.urn ORDER BY b.urn`,
      [onTypes, lastUrn, RUN_BATCH],
    );
    if (rows.length === 0) break;
    const at = Date.now();
    const evaluating = performance.now();
    for (const entity of rows) {
      const e = evaluateEntity([test], entity, at);
      outcomes += e.passing.length + e.failing.length + e.notApplicable.length;
    }
    evaluateMs += performance.now() - evaluating;
    evaluated += rows.length;
    lastUrn = rows.at(-1)!.urn;
  }
  const ms = performance.now() - started;
  if (outcomes !== evaluated) throw new Error(`the floor evaluated ${evaluated} entities into ${outcomes} outcomes`);
  return { evaluated, ms, perThousandMs: ms / (evaluated / 1000), evaluateMs };
}

/** `n` datasets, three aspects each (a quarter on hive, the rest on kafka), analyzed: what runTest reads. */
export async function loadDatasets(pool: import("pg").Pool, n: number): Promise<void> {
  await pool.query(
    `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
     SELECT 'urn:li:dataset:(urn:li:dataPlatform:' || (CASE WHEN i % 4 = 0 THEN 'hive' ELSE 'kafka' END) ||
            ',db.t' || lpad(i::text, 7, '0') || ',PROD)', a.name, 1, 'dataset', a.value, 'bench'
       FROM generate_series(1, $1::int) AS i
      CROSS JOIN LATERAL (VALUES
        ('datasetProperties', jsonb_build_object('description', CASE WHEN i % 3 = 0 THEN NULL ELSE 'table ' || i END,
                                                 'customProperties', jsonb_build_object('team', 't' || (i % 17)))),
        ('ownership', jsonb_build_object('owners', jsonb_build_array(
           jsonb_build_object('owner', 'urn:li:corpuser:u' || (i % 100),
                              'type', CASE WHEN i % 5 = 0 THEN 'DATAOWNER' ELSE 'TECHNICAL_OWNER' END)))),
        ('globalTags', jsonb_build_object('tags', jsonb_build_array(jsonb_build_object('tag', 'urn:li:tag:t' || (i % 7)))))
      ) AS a(name, value)`,
    [n],
  );
  await pool.query("ANALYZE aspect");
}

/** The test runTest runs over those datasets (kafka ones, three rules); returns its urn. */
export async function createRunTestTest(api: ApiClient, id = "bench-run"): Promise<string> {
  const created = (await api.graphql(`mutation($input: CreateTestInput!) { createTest(input: $input) }`, {
    input: {
      id,
      name: "owned and described",
      category: "Bench",
      // Only the runs the benchmark starts: on change (the default), creating the test would start a run of its own
      // with push over every entity, which ran beside the measured floor and runs and pushed their results first.
      evaluateOnChange: false,
      definition: {
        json: JSON.stringify({
          on: {
            types: ["dataset"],
            conditions: { property: "platform", operator: "equals", value: "urn:li:dataPlatform:kafka" },
          },
          rules: [
            { property: "datasetProperties.description", operator: "exists" },
            { property: "ownership.owners.type", operator: "equals", value: "TECHNICAL_OWNER" },
            { not: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:t3"] } },
          ],
        }),
      },
    },
  })) as { createTest: string };
  return created.createTest;
}

interface TaskStatusBody {
  state: string;
  startedAt: number;
  finishedAt: number;
  failedReason: string | null;
  progress: {
    evaluated: number;
    batches: number;
    passing: number;
    failing: number;
    notApplicable: number;
    pushed: number;
  };
}

export async function waitForTask(api: ApiClient, taskId: string): Promise<TaskStatusBody> {
  for (;;) {
    const status = (await api.post("/gms/operations?action=getTaskStatus", { taskId })) as TaskStatusBody;
    if (status.state === "completed") return status;
    if (status.state !== "waiting" && status.state !== "active")
      throw new Error(`task ${taskId}: ${status.state} ${status.failedReason}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Ten tests on datasets, covering every operator family, some passing and some failing on the entity. */
export async function seedOneEntityAndTenTests(api: ApiClient): Promise<void> {
  const aspect = (aspectName: string, value: unknown) => ({
    entityType: "dataset",
    entityUrn: ENTITY,
    aspectName,
    changeType: "UPSERT",
    aspect: { contentType: "application/json", value: JSON.stringify(value) },
  });
  await api.post("/gms/aspects?action=ingestProposalBatch", {
    proposals: [
      aspect("datasetProperties", { description: "All orders", customProperties: { retention: "30", tier: "gold" } }),
      aspect("ownership", { owners: [{ owner: "urn:li:corpuser:ann", type: "TECHNICAL_OWNER" }] }),
      aspect("globalTags", { tags: [{ tag: "urn:li:tag:finance" }, { tag: "urn:li:tag:pii" }] }),
      aspect("schemaMetadata", {
        fields: Array.from({ length: 30 }, (_, i) => ({
          fieldPath: `col_${i}`,
          nativeDataType: i % 2 ? "int" : "string",
        })),
      }),
      aspect("status", { removed: false }),
    ],
  });
  const rules: unknown[] = [
    { property: "datasetProperties.description", operator: "exists" },
    { property: "ownership.owners.type", operator: "equals", value: "DATAOWNER" },
    { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:pii", "urn:li:tag:sensitive"] },
    { property: "datasetProperties.customProperties.retention", operator: "greater_than", value: "7" },
    { property: "schemaMetadata.fields.fieldPath", operator: "regex_match", value: "^col_[0-9]+$" },
    { property: "status.removed", operator: "is_false" },
    {
      or: [
        { property: "platform", operator: "equals", value: "urn:li:dataPlatform:kafka" },
        { property: "urn", operator: "contains_str", value: "orders" },
      ],
    },
    { not: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:deprecated"] } },
    { property: "datasetProperties.customProperties.tier", operator: "starts_with", value: "plat" },
    [
      { property: "ownership.owners.owner", operator: "exists" },
      { property: "schemaMetadata.fields.nativeDataType", operator: "equals", value: "decimal" },
    ],
  ];
  for (const [i, rule] of rules.entries()) {
    await api.graphql(`mutation($input: CreateTestInput!) { createTest(input: $input) }`, {
      input: {
        id: `bench-${i}`,
        name: `bench test ${i}`,
        category: "Bench",
        definition: { json: JSON.stringify({ on: { types: ["dataset"] }, rules: rule }) },
      },
    });
  }
}

export interface ApiClient {
  post(path: string, body: unknown): Promise<unknown>;
  graphql(query: string, variables: Record<string, unknown>): Promise<unknown>;
  /** the benchmarked call: a prepared body, any answer but 200 fails the run */
  raw(path: string, body: string): Promise<void>;
}

export function apiClient(baseUrl: string, agent: http.Agent, caller: Record<string, string>): ApiClient {
  const { hostname, port } = new URL(baseUrl);
  const send = (path: string, body: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          hostname,
          port,
          path,
          method: "POST",
          agent,
          headers: { ...caller, "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return {
    async post(path, body) {
      const res = await send(path, JSON.stringify(body));
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
      return (JSON.parse(res.text) as { value: unknown }).value;
    },
    async graphql(query, variables) {
      const res = await send("/api/graphql", JSON.stringify({ query, variables }));
      const parsed = JSON.parse(res.text) as { data?: unknown; errors?: unknown };
      if (parsed.errors) throw new Error(JSON.stringify(parsed.errors));
      return parsed.data;
    },
    async raw(path, body) {
      const res = await send(path, body);
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
    },
  };
}

/** SCAN sees one server's keys: on a cluster, each master's (the prefix's keys share a slot there, so UNLINK takes them). */
async function removeKeys(redis: RedisConnection, prefix: string): Promise<void> {
  for (const node of redis instanceof Cluster ? redis.nodes("master") : [redis]) {
    for await (const keys of node.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<string[]>) {
      if (keys.length > 0) await node.unlink(...keys);
    }
  }
}

function waitForProcessOutput(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for '${text}'`)), 30_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}
