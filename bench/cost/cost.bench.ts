/**
 * bench/cost: what one request costs each process involved, on a PostgreSQL and a Redis of the benchmark's own
 * (private-stack.ts), so that every count is this run's. For each operation: CPU time per request of the gateway, the
 * truncation worker, the evaluation worker, PostgreSQL (the postmaster and every backend), Redis and the load
 * generator (this process), from /proc utime + stime deltas; PostgreSQL statements per request (pg_stat_statements);
 * Redis commands per request (INFO commandstats); RSS at rest and its peak under load. What the processes use at rest
 * (timers, BullMQ's polling, PostgreSQL's background processes) is measured first and subtracted from every window.
 * Then the capacity model of docs/capacity.md, from these figures, and its check: predicted against measured
 * throughput of bearer requests to 1 and to 2 gateways.
 */
import http from "node:http";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { bulkLoad, createDatabase, DAY_MILLIS } from "@mdp/db";
import { startRedisCluster } from "../../scripts/redis-cluster";
import {
  freePort,
  monitorUrl,
  startService,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../../test/support/services";
import {
  apiClient,
  createRunTestTest,
  ENTITY,
  loadDatasets,
  seedOneEntityAndTenTests,
  type ApiClient,
} from "../evaluate/evaluate.bench";
import { spawnBenchProcess } from "../support/bench-process";
import { productionSetup } from "../support/production";
import { medianCost, printGoals, type Goal } from "./goals";
import { median } from "../support/load";
import { cores, loadAverage, type Measured } from "./proc";
import { cannon, Meter, type Cost, type LoadTarget } from "./meter";
import { startPrivateStack, type PrivateStack } from "./private-stack";
import { tokenFloorGoals, type TokenFloorsContext, type TokenOperation } from "./token-floors";
import { evaluateFloorGoals, runTestFloorGoals } from "./evaluation-floors";

const SECONDS = Number(process.env.BENCH_COST_SECONDS ?? 4);
const WARM_UP_SECONDS = 2;
const TRUNCATE_ROWS = Number(process.env.BENCH_COST_TRUNCATE_ROWS ?? 1_000_000);
const ENTITIES = Number(process.env.BENCH_COST_ENTITIES ?? 20_000);
/**
 * BENCH_COST_ONLY: a comma-separated list of the HTTP operations to measure (me, list, create, evaluate,
 * evaluateSystem), each after the echo floor, and nothing else (no ingest, truncation or model check): a per-request
 * CPU figure for A/B runs (BENCH_COST_ROUNDS=1 for a quicker one) and for a profile of one operation. `runTest` in the
 * list adds the runTest windows (push false and true), each with PostgreSQL's statements by execution time; `cluster`
 * the queue commands' spread over a 3-master Redis Cluster (clusterSpread); `replica` runTest without push with a
 * read replica against without one (replicaRunTests).
 */
const ONLY = process.env.BENCH_COST_ONLY?.split(",").map((name) => name.trim());
const RUN_TEST = "runTest";
const CLUSTER = "cluster";
const REPLICA = "replica";
/** paired windows of runTest without push, with a replica and without (their median ratio is the figure) */
const REPLICA_ROUNDS = Number(process.env.BENCH_COST_REPLICA_ROUNDS ?? 5);
/** the cluster section's warm-up, rest and load windows: a fresh gateway and worker need a few seconds to warm */
const CLUSTER_SECONDS = Math.max(SECONDS, 8);
const CONNECTIONS = 10;
const EVALUATE_CONNECTIONS = 50; // as bench/evaluate: the gateway batches what arrives together
const INGEST_CONCURRENCY = 4; // as bench/ingest
const ROWS_PER_BATCH = 1000;
const ROOT = "urn:li:corpuser:admin";
const BULK = "urn:li:corpuser:bulk";
const DAY = Date.UTC(2026, 4, 1);

export async function benchCost(): Promise<void> {
  process.stdout.write(
    `\nbench/cost: starting a private PostgreSQL (pg_stat_statements) and Redis; load average ${loadAverage()}\n`,
  );
  const stack = await startPrivateStack();
  const database = createDatabase(stack.databaseUrl);
  const production = productionSetup();
  const [port, port2, echoPort] = [await freePort(), await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  // Rate limits on but never reached: a bearer caller's requests pay for their counting in Redis, as users' do.
  const env = {
    ...production.env,
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    QUEUE_PREFIX: uniqueName("bench-cost"),
    LOG_LEVEL: "warn",
    RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "1000000",
    RATE_LIMIT_EVALUATIONS_PER_MINUTE: "10000000",
    RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: "1000000",
    RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1000000",
  };
  const gateway = startService("gateway", { ...env, PORT: String(port) });
  // Workers log "worker running" at info; nothing per job.
  const truncationWorker = startService("truncation-worker", { ...env, LOG_LEVEL: "info" });
  const evaluationWorker = startService("evaluation-worker", { ...env, LOG_LEVEL: "info" });
  let gateway2: ReturnType<typeof startService> | undefined;
  let gateway3: ReturnType<typeof startService> | undefined;
  // The floor of a request's CPU on this stack: bench/tokens' bare Apollo echo (express 5, Apollo Server 5, nothing else).
  const echo = spawnBenchProcess(path.join(__dirname, "../support/echo-server.ts"), { PORT: String(echoPort) });
  const agent = new http.Agent({ keepAlive: true, maxSockets: EVALUATE_CONNECTIONS });
  try {
    await Promise.all([
      new Promise((resolve) => echo.stdout!.once("data", resolve)),
      waitUntilReady(base, gateway),
      waitForOutput(truncationWorker, "worker running"),
      waitForOutput(evaluationWorker, "worker running"),
    ]);
    const processes: Measured[] = [
      { name: "gateway", pid: gateway.process.pid! },
      { name: "truncation worker", pid: truncationWorker.process.pid! },
      { name: "evaluation worker", pid: evaluationWorker.process.pid! },
      { name: "PostgreSQL", pid: stack.postmasterPid, tree: true },
      { name: "Redis", pid: stack.redisPid },
      { name: "load generator", pid: process.pid },
    ];
    const echoMeasured: Measured = { name: "bare Apollo echo", pid: echo.pid! };

    // Fixtures: 10,000 tokens of one user (the list reads 100 of them), a bearer token of root, ten tests and an entity.
    const system = apiClient(base, agent, production.systemClient(ROOT));
    await database.pool.query(
      `INSERT INTO access_token (id, name, actor_urn, owner_urn, token_hash, created_at, expires_at)
       SELECT gen_random_uuid(), 'seeded ' || i, $1, $1, md5(i::text) || md5((i + 1)::text),
              now() - i * interval '1 second', now() + interval '1 day'
       FROM generate_series(1, 10000) AS i`,
      [BULK],
    );
    await database.pool.query("VACUUM ANALYZE access_token");
    const token = (
      (await system.graphql(
        `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_DAY, name: "cost"}) { accessToken } }`,
        {},
      )) as { createAccessToken: { accessToken: string } }
    ).createAccessToken.accessToken;
    const bearer = { "content-type": "application/json", authorization: `Bearer ${token}` };
    const api = apiClient(base, agent, bearer);
    await seedOneEntityAndTenTests(system);

    const gql = (query: string) => JSON.stringify({ query, variables: {} });
    const target = (path: string, body: string, p = port): LoadTarget => ({
      url: `http://127.0.0.1:${p}${path}`,
      headers: bearer,
      body,
    });
    const requests = {
      me: target("/api/graphql", gql(`{ me { urn } }`)),
      list: target(
        "/api/graphql",
        gql(
          `{ listAccessTokens(input: {start: 0, count: 100, filters: [{field: "actorUrn", value: "${BULK}"}]}) { total tokens { urn id actorUrn } } }`,
        ),
      ),
      create: target(
        "/api/graphql",
        gql(
          `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_HOUR, name: "cost"}) { accessToken } }`,
        ),
      ),
      evaluate: target("/gms/test?action=evaluate", JSON.stringify({ urn: ENTITY })),
      echo: {
        url: `http://127.0.0.1:${echoPort}/api/graphql`,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: `mutation($i: String!) { echo(input: $i) }`, variables: { i: "hello" } }),
      },
      evaluateSystem: {
        ...target("/gms/test?action=evaluate", JSON.stringify({ urn: ENTITY })),
        headers: production.systemClient(ROOT),
      },
    };
    // Warm-up of every path before anything is measured: a fresh gateway's first seconds are mostly V8 compiling.
    const only = ONLY?.filter((name) => ![RUN_TEST, CLUSTER, REPLICA].includes(name)).map((name) => {
      if (!(name in requests) || name === "echo") throw new Error(`BENCH_COST_ONLY: unknown operation ${name}`);
      return name as keyof typeof requests;
    });
    const warm = only ? (["echo", ...only] as const) : (Object.keys(requests) as (keyof typeof requests)[]);
    for (const name of warm) await cannon([requests[name]], CONNECTIONS, WARM_UP_SECONDS);
    // What the warm-up's creations left for autovacuum is done now, not inside the next windows.
    await database.pool.query("VACUUM ANALYZE access_token");
    const meter = new Meter([...processes, echoMeasured], stack);
    await meter.measureRest(3);
    const costs: Cost[] = [];
    const goals: Goal[] = [];
    const floors: TokenFloorsContext = {
      ...{ stack, systemHeaders: production.systemClient(ROOT), requests, listActorUrn: BULK, meUrn: ROOT },
      ...{ connections: CONNECTIONS, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS },
    };
    const evaluationFloors = (evaluate: () => Promise<Cost>) =>
      evaluateFloorGoals({
        stack,
        evaluate,
        entity: ENTITY,
        bearer: token,
        connections: EVALUATE_CONNECTIONS,
        seconds: SECONDS,
        warmUpSeconds: WARM_UP_SECONDS,
      });
    const http1 = async (operation: string, t: LoadTarget, connections = CONNECTIONS) => {
      await meter.settle(database.pool);
      return meter.window(operation, "request", async () => ({ units: await cannon([t], connections, SECONDS) }));
    };
    const evaluate = () => http1("evaluate (10 tests, one entity)", requests.evaluate, EVALUATE_CONNECTIONS);
    const tokenWindows = {
      me: () => http1("bearer request (GraphQL me)", requests.me),
      list: () => http1("listAccessTokens (100 of 10,000)", requests.list),
      create: () => http1("createAccessToken", requests.create),
    };

    const floor = await http1("floor: bare Apollo echo mutation", requests.echo);
    if (only) {
      const tokenOps = only.filter((name): name is TokenOperation => name in tokenWindows);
      const tokens = await tokenFloorGoals(floors, Object.fromEntries(tokenOps.map((op) => [op, tokenWindows[op]])));
      goals.push(...tokens.goals);
      for (const name of only) {
        if (name === "evaluate") {
          const evaluated = await evaluationFloors(evaluate);
          costs.push(evaluated.cost);
          goals.push(...evaluated.goals);
        } else if (name === "evaluateSystem") {
          costs.push(await http1(name, requests[name], EVALUATE_CONNECTIONS));
        } else if (name !== "echo") {
          costs.push(tokens.costs[name]!);
        }
      }
      let urn: string | undefined;
      if (ONLY!.includes(RUN_TEST)) {
        const run = await runTests(meter, api, system, database.pool, stack);
        costs.push(...run.costs);
        urn = run.urn;
        goals.push(...run.goals);
      }
      const floorCpu = floor.cpu["bare Apollo echo"]!;
      process.stdout.write(`\nfloor: bare Apollo echo ${us(floorCpu)} µs per request (load average ${floor.load})\n`);
      for (const cost of costs) printCost(cost, floorCpu);
      if (ONLY!.includes(REPLICA)) {
        if (urn === undefined) {
          await loadDatasets(database.pool, ENTITIES);
          urn = await createRunTestTest(system);
        }
        const standby = await stack.startStandby(); // after the datasets: its base backup holds them
        await replicaRunTests({
          env,
          stack,
          pool: database.pool,
          standby,
          agent,
          bearer,
          urn,
          primary: { gateway, evaluationWorker, api },
        });
      }
      if (ONLY!.includes(CLUSTER)) await clusterSpread(env, production.systemClient(ROOT));
      printGoals(goals);
      return;
    }
    const tokens = await tokenFloorGoals(floors, tokenWindows);
    costs.push(tokens.costs.me!, tokens.costs.list!, tokens.costs.create!);
    goals.push(...tokens.goals);
    const evaluated = await evaluationFloors(evaluate);
    costs.push({
      ...evaluated.cost,
      note: `${EVALUATE_CONNECTIONS} connections: the gateway puts what arrives together into one job`,
    });
    goals.push(...evaluated.goals);
    costs.push({
      ...(await http1("evaluate, system client", requests.evaluateSystem, EVALUATE_CONNECTIONS)),
      note: "the same as the system client, which is never rate-limited: the difference is the per-actor rate limits",
    });
    costs.push(await ingest(meter, base, bearer, database.pool));
    costs.push(...(await truncation(meter, api, database.pool)));
    const runTestCosts = await runTests(meter, api, system, database.pool, stack);
    costs.push(...runTestCosts.costs);
    goals.push(...runTestCosts.goals);

    printRest(meter.rest);
    const floorCpu = floor.cpu["bare Apollo echo"]!;
    process.stdout.write(
      `\nfloor: a bare Apollo echo mutation (express 5 + Apollo Server 5, nothing else) costs ${us(floorCpu)} µs of CPU ` +
        `per request in its process (${(floor.units / floor.seconds).toFixed(0)}/s wall, load average ${floor.load});\n` +
        `each request's gateway CPU is printed as a ratio to it\n`,
    );
    for (const cost of costs) printCost(cost, floorCpu);
    printModel(costs);

    // The model's check: bearer requests to one gateway, then spread over two.
    gateway2 = startService("gateway", { ...env, PORT: String(port2) });
    await waitUntilReady(`http://127.0.0.1:${port2}`, gateway2);
    const gateway2Measured: Measured = { name: "gateway 2", pid: gateway2.process.pid! };
    const me = (p: number) => target("/api/graphql", gql(`{ me { urn } }`), p);
    await cannon([me(port2)], CONNECTIONS, WARM_UP_SECONDS);
    const check = new Meter([...processes, gateway2Measured], stack);
    await check.settle(database.pool);
    process.stdout.write(
      `\nat rest before the check (CPU seconds per second): ` +
        Object.entries(check.rest.cpu)
          .map(([name, s]) => `${name} ${s.toFixed(3)}`)
          .join(", ") +
        "\n",
    );
    const one = await check.window("check: 1 gateway", "request", async () => ({
      units: await cannon([me(port)], CONNECTIONS, SECONDS),
    }));
    const two = await check.window("check: 2 gateways", "request", async () => ({
      units: await cannon([me(port), me(port2)], CONNECTIONS / 2, SECONDS),
    }));
    printCheck(
      costs.find((c) => c.operation.startsWith("bearer"))!,
      [one, two],
      [["gateway"], ["gateway", "gateway 2"]],
    );

    // With a read replica: listAccessTokens through a gateway whose listings read a streaming hot standby (on a queue
    // prefix of its own: its runTests below go to an evaluation worker that reads the standby too).
    const standby = await stack.startStandby();
    const port3 = await freePort();
    const replicaEnv = replicaEnvOf(env, standby);
    gateway3 = startService("gateway", { ...replicaEnv, PORT: String(port3) });
    const base3 = `http://127.0.0.1:${port3}`;
    await waitUntilReady(base3, gateway3);
    await waitFor("the replica in use", async () => {
      const ready = (await (await fetch(`${base3}/ready`)).json()) as { replicas?: { state: string }[] };
      return ready.replicas?.[0]?.state === "in-use";
    });
    const list3 = { ...requests.list, url: `${base3}/api/graphql` };
    await cannon([list3], CONNECTIONS, WARM_UP_SECONDS);
    const withReplica = new Meter(
      [
        { name: "gateway", pid: gateway3.process.pid! },
        { name: "PostgreSQL", pid: stack.postmasterPid, tree: true },
        { name: "PostgreSQL standby", pid: standby.postmasterPid, tree: true },
        { name: "load generator", pid: process.pid },
      ],
      stack,
    );
    await withReplica.measureRest(3);
    const replicaCost = await withReplica.window(
      "listAccessTokens (100 of 10,000), a replica",
      "request",
      async () => ({
        units: await cannon([list3], CONNECTIONS, SECONDS),
      }),
    );
    printCost(replicaCost, floorCpu);
    const primaryAlone = costs.find((c) => c.operation.startsWith("listAccessTokens"))!.cpu.PostgreSQL!;
    const primaryWith = replicaCost.cpu.PostgreSQL!;
    process.stdout.write(
      `\nlistAccessTokens with a read replica: the primary's CPU ${us(primaryWith)} µs per request ` +
        `(${((100 * primaryWith) / primaryAlone).toFixed(1)}% of ${us(primaryAlone)} µs without), ` +
        `the standby's ${us(replicaCost.cpu["PostgreSQL standby"]!)} µs\n`,
    );
    await replicaRunTests({
      env,
      stack,
      pool: database.pool,
      standby,
      agent,
      bearer,
      urn: runTestCosts.urn,
      primary: { gateway, evaluationWorker, api },
      replicaGateway: { service: gateway3, base: base3, prefix: replicaEnv.QUEUE_PREFIX! },
    });
    await clusterSpread(env, production.systemClient(ROOT));
    printGoals(goals);
  } finally {
    agent.destroy();
    echo.kill("SIGTERM");
    await Promise.all([
      gateway.stop(),
      truncationWorker.stop(),
      evaluationWorker.stop(),
      gateway2?.stop(),
      gateway3?.stop(),
    ]);
    await database.close();
    await stack.stop();
  }
}

/**
 * The queues' commands over a Redis Cluster's masters: a private 3-master cluster (scripts/redis-cluster.ts), a
 * gateway and an evaluation worker on it (the same database), system-client evaluates (no rate-limit counters: only
 * the queue's and its replies' commands, and the processes' own polling) for SECONDS, with QUEUE_SHARDS 1 and then
 * 3; each master's commands from its INFO commandstats, before and after, less what it serves at rest. The busiest master's share is what bounds
 * the evaluations a cluster serves (docs/capacity.md).
 */
async function clusterSpread(env: Record<string, string>, headers: Record<string, string>): Promise<void> {
  const cluster = await startRedisCluster(path.resolve(__dirname, "..", "..", ".data"), {
    name: `bench-cost-cluster-${process.pid}`,
  });
  const commandsOn = async (port: number) => {
    const node = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
    await node.connect();
    try {
      let calls = 0;
      for (const [, command, n] of (await node.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        if (command !== "info" && !command!.startsWith("cluster")) calls += Number(n);
      }
      return calls;
    } finally {
      node.disconnect();
    }
  };
  const rows: string[] = [];
  try {
    for (const shards of [1, 3]) {
      const port = await freePort();
      const shardEnv = {
        ...env,
        REDIS_URL: cluster.url,
        QUEUE_PREFIX: `{${uniqueName("bench-cost")}}`,
        QUEUE_SHARDS: String(shards),
        PORT: String(port),
        EVALUATION_WORKER_PORT: "0",
      };
      const gateway = startService("gateway", shardEnv);
      const worker = startService("evaluation-worker", { ...shardEnv, LOG_LEVEL: "info" });
      try {
        await Promise.all([
          waitUntilReady(`http://127.0.0.1:${port}`, gateway),
          waitForOutput(worker, "worker running"),
        ]);
        const load = {
          url: `http://127.0.0.1:${port}/gms/test?action=evaluate`,
          headers,
          body: JSON.stringify({ urn: ENTITY }),
        };
        await cannon([load], EVALUATE_CONNECTIONS, CLUSTER_SECONDS);
        // what the processes send at rest (workers' polling, chores, heartbeats), per second, is taken off
        const snapshot = () => Promise.all(cluster.ports.map(commandsOn));
        const idleFrom = await snapshot();
        await new Promise((resolve) => setTimeout(resolve, CLUSTER_SECONDS * 1000));
        const idle = (await snapshot()).map((n, i) => (n - idleFrom[i]!) / CLUSTER_SECONDS);
        const before = await snapshot();
        const evaluations = await cannon([load], EVALUATE_CONNECTIONS, CLUSTER_SECONDS);
        const served = (await snapshot()).map((n, i) =>
          Math.max(0, Math.round(n - before[i]! - idle[i]! * CLUSTER_SECONDS)),
        );
        const total = served.reduce((a, b) => a + b, 0);
        const busiest = Math.max(...served) / total;
        rows.push(
          `| ${shards} | ${evaluations} | ${(total / evaluations).toFixed(1)} | ${served.join(" / ")} | ${(busiest * 100).toFixed(1)}% |`,
        );
      } finally {
        await Promise.all([gateway.stop(), worker.stop()]);
      }
    }
  } finally {
    await cluster.stop();
  }
  process.stdout.write(
    `\nqueue commands over a 3-master Redis Cluster (evaluate, system client, ${EVALUATE_CONNECTIONS} connections, ${CLUSTER_SECONDS} s, less the commands at rest; goal: the busiest master under 50%)\n\n` +
      `| QUEUE_SHARDS | evaluations | commands per evaluation | commands per master | busiest master's share |\n` +
      `| -----------: | ----------: | ----------------------: | ------------------- | ---------------------: |\n` +
      rows.join("\n") +
      "\n",
  );
}

/** ingestProposalBatch of 1,000 time-series rows, INGEST_CONCURRENCY at once, each body new (new days included). */
async function ingest(
  meter: Meter,
  base: string,
  headers: Record<string, string>,
  pool: import("pg").Pool,
): Promise<Cost> {
  const bodies = Array.from({ length: 400 }, (_, r) =>
    JSON.stringify({
      proposals: Array.from({ length: ROWS_PER_BATCH }, (_, i) => {
        const timestampMillis = DAY - 90 * DAY_MILLIS + (r * ROWS_PER_BATCH + i) * 10_000;
        return {
          entityType: "dataset",
          entityUrn: `urn:li:dataset:(urn:li:dataPlatform:hive,db.table${i % 200},PROD)`,
          aspectName: "datasetProfile",
          changeType: "UPSERT",
          aspect: {
            contentType: "application/json",
            value: JSON.stringify({ timestampMillis, rowCount: i * 7, columnCount: i % 40 }),
          },
        };
      }),
    }),
  );
  let next = 0;
  const send = async () => {
    const res = await fetch(`${base}/gms/aspects?action=ingestProposalBatch`, {
      method: "POST",
      headers,
      body: bodies[next++]!,
    });
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
  };
  const drive = async (seconds: number) => {
    const end = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: INGEST_CONCURRENCY }, async () => {
        while (performance.now() < end && next < bodies.length) {
          await send();
          done++;
        }
      }),
    );
    return done;
  };
  await drive(1); // warm-up
  await meter.settle(pool);
  return {
    ...(await meter.window(`ingest batch (${ROWS_PER_BATCH} rows)`, "request", async () => ({
      units: await drive(SECONDS),
    }))),
    note: `${INGEST_CONCURRENCY} at once, each a new 1,000 rows (new day partitions as they come)`,
  };
}

/**
 * Truncation through the API and the truncation worker, polled every 250 ms as a client would (the polls are in the
 * gateway's share): (a) TRUNCATE_ROWS rows in one day, half of them deleted in batches, per million rows deleted;
 * (b) TRUNCATE_ROWS rows over 10 days, the 5 oldest days' partitions dropped whole, per task.
 */
async function truncation(meter: Meter, api: ApiClient, pool: import("pg").Pool): Promise<Cost[]> {
  const run = async (aspect: string, endTimeMillis: number) => {
    const taskId = (await api.post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect,
      endTimeMillis,
      dryRun: false,
    })) as string;
    let polls = 0;
    for (;;) {
      polls++;
      const status = (await api.post("/gms/operations?action=getTaskStatus", { taskId })) as {
        state: string;
        progress: { deleted: number };
      };
      if (status.state === "completed") return { deleted: status.progress.deleted, polls };
      if (status.state !== "waiting" && status.state !== "active") throw new Error(`truncation: ${status.state}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  process.stdout.write(`bench/cost: loading 2 × ${TRUNCATE_ROWS} time-series rows...\n`);
  await bulkLoad(pool, {
    entityType: "dataset",
    aspectName: "datasetUsageStatistics",
    rows: TRUNCATE_ROWS,
    days: 1,
    endMillis: DAY,
    urns: 1000,
  });
  await bulkLoad(pool, {
    entityType: "dataset",
    aspectName: "operation",
    rows: TRUNCATE_ROWS,
    days: 10,
    endMillis: DAY,
    urns: 1000,
  });
  await meter.settle(pool);
  let batchedPolls = 0;
  let deleted = 0;
  const batched = await meter.window("truncation, batched deletes", "million rows", async () => {
    const r = await run("datasetUsageStatistics", DAY + DAY_MILLIS / 2);
    batchedPolls = r.polls;
    deleted = r.deleted;
    return { units: r.deleted / 1e6 };
  });
  let dropPolls = 0;
  let dropped = 0;
  const drops = await meter.window("truncation, 5 partitions dropped", "task", async () => {
    const r = await run("operation", DAY - 4 * DAY_MILLIS);
    dropPolls = r.polls;
    dropped = r.deleted;
    return { units: 1 };
  });
  return [
    {
      ...batched,
      note: `${deleted} rows of one day's partition deleted in batches, ${batchedPolls} status polls${TRUNCATE_ROWS < 1e6 ? `; scaled from ${deleted} rows to a million` : ""}`,
    },
    {
      ...drops,
      note: `${dropped} rows in 5 whole partitions, ${dropPolls} status polls; cost follows partitions, not rows`,
    },
  ];
}

/**
 * runTest over ENTITIES datasets, without and with push, per thousand entities (polls in the gateway's share). With
 * push in rounds against its floors (runTestFloorGoals), after two warm-ups as the floors get two, each round a test's
 * first run with push: a test of its own (the same definition) and the previous round's deleted, so that every round
 * writes every entity the test applies to (dropping the deleted test's entry), as the floors write every pass. A second
 * run of one test would write nothing: its results are those stored.
 */
async function runTests(
  meter: Meter,
  api: ApiClient,
  system: ApiClient,
  pool: import("pg").Pool,
  stack: PrivateStack,
): Promise<{ costs: Cost[]; urn: string; goals: Goal[] }> {
  process.stdout.write(`bench/cost: loading ${ENTITIES} datasets...\n`);
  await loadDatasets(pool, ENTITIES);
  const urn = await createRunTestTest(system);
  const window = async (test: string, push: boolean, operation: string): Promise<Cost> => {
    await meter.settle(pool);
    const before = await stack.statementTimes();
    const { cost, evaluated, polls } = await runTestWindow(meter, api, test, push, operation);
    return {
      ...cost,
      note:
        `${evaluated} entities (3 aspects each), ${polls} status polls; PostgreSQL's statements by execution time ` +
        `per thousand entities:\n${statementsByTime(before, await stack.statementTimes(), cost.units)}`,
    };
  };
  const withoutPush = await window(urn, false, "runTest, push false");
  let pushes = 0;
  let pushed: string | undefined;
  const pushRound = async (operation: string) => {
    const test = await createRunTestTest(system, `bench-run-push-${++pushes}`);
    if (pushed) await system.graphql(`mutation($urn: String!) { deleteTest(urn: $urn) }`, { urn: pushed });
    pushed = test;
    return window(test, true, operation);
  };
  // Two warm-ups: the first push merges onto no stored results, every later one onto the last's; the worker's first
  // measured round once cost 31-39 ms per thousand entities against 16-26 ms in the rounds after it.
  await pushRound("runTest, push true (warm-up)");
  await pushRound("runTest, push true (warm-up)");
  const { goals, pushes: windows } = await runTestFloorGoals({
    stack,
    pool,
    push: () => pushRound("runTest, push true"),
    testUrn: urn,
  });
  return { costs: [withoutPush, medianCost(windows, "evaluation worker")], urn, goals };
}

/** One runTest of `urn` through `api`, polled every 250 ms until it completes, as a window per thousand entities. */
async function runTestWindow(
  meter: Meter,
  api: ApiClient,
  urn: string,
  push: boolean,
  operation: string,
): Promise<{ cost: Cost; evaluated: number; polls: number }> {
  let polls = 0;
  let evaluated = 0;
  const cost = await meter.window(operation, "thousand entities", async () => {
    const taskId = (
      (await api.graphql(`mutation($urn: String!, $push: Boolean) { runTest(urn: $urn, push: $push) }`, {
        urn,
        push,
      })) as { runTest: string }
    ).runTest;
    for (;;) {
      polls++;
      const status = (await api.post("/gms/operations?action=getTaskStatus", { taskId })) as {
        state: string;
        progress: { evaluated: number };
      };
      if (status.state === "completed") {
        evaluated = status.progress.evaluated;
        return { units: evaluated / 1000 };
      }
      if (status.state !== "waiting" && status.state !== "active") throw new Error(`runTest: ${status.state}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
  return { cost, evaluated, polls };
}

/** A gateway's or worker's settings to read the standby: on a queue prefix of their own, so their jobs stay theirs. */
function replicaEnvOf(env: Record<string, string>, standby: { databaseUrl: string }): Record<string, string> {
  return { ...env, DATABASE_REPLICA_URLS: standby.databaseUrl, QUEUE_PREFIX: uniqueName("bench-cost-replica") };
}

/**
 * runTest without push with a read replica: an evaluation worker (and a gateway) with DATABASE_REPLICA_URLS naming
 * the standby, on a queue prefix of their own, against the run's gateway and worker without one, on the same
 * database and standby. REPLICA_ROUNDS pairs of windows, their order alternating; per pair the primary's CPU per
 * thousand entities with the replica as a share of it without; the median pair is the figure (goal: under 10%; what
 * stays on the primary is the task's claim, checkpoints and progress, and the gateway's polls).
 */
async function replicaRunTests(ctx: {
  env: Record<string, string>;
  stack: PrivateStack;
  pool: import("pg").Pool;
  standby: { databaseUrl: string; postmasterPid: number };
  agent: http.Agent;
  bearer: Record<string, string>;
  urn: string;
  primary: { gateway: RunningService; evaluationWorker: RunningService; api: ApiClient };
  /** a gateway already reading the standby (on replicaEnvOf's settings), else one is started */
  replicaGateway?: { service: RunningService; base: string; prefix: string };
}): Promise<void> {
  const replicaEnv = ctx.replicaGateway ? undefined : replicaEnvOf(ctx.env, ctx.standby);
  let started: RunningService | undefined;
  let base = ctx.replicaGateway?.base;
  if (!base) {
    const port = await freePort();
    started = startService("gateway", { ...replicaEnv!, PORT: String(port) });
    base = `http://127.0.0.1:${port}`;
  }
  const gateway = ctx.replicaGateway?.service ?? started!;
  // The worker on the replica gateway's queue prefix (its jobs are the replica gateway's).
  const prefix = ctx.replicaGateway?.prefix ?? replicaEnv!.QUEUE_PREFIX!;
  const worker = startService("evaluation-worker", {
    ...ctx.env,
    DATABASE_REPLICA_URLS: ctx.standby.databaseUrl,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: "info",
  });
  try {
    await Promise.all([waitUntilReady(base, gateway), waitForOutput(worker, "worker running")]);
    const workerMonitor = await monitorUrl(worker);
    for (const url of [base, workerMonitor])
      await waitFor(`the replica in use at ${url}`, async () => {
        const ready = (await (await fetch(`${url}/ready`)).json()) as { replicas?: { state: string }[] };
        return ready.replicas?.[0]?.state === "in-use";
      });
    const replicaApi = apiClient(base, ctx.agent, ctx.bearer);
    const meter = new Meter(
      [
        { name: "gateway", pid: ctx.primary.gateway.process.pid! },
        { name: "evaluation worker", pid: ctx.primary.evaluationWorker.process.pid! },
        { name: "gateway, replica", pid: gateway.process.pid! },
        { name: "evaluation worker, replica", pid: worker.process.pid! },
        { name: "PostgreSQL", pid: ctx.stack.postmasterPid, tree: true },
        { name: "PostgreSQL standby", pid: ctx.standby.postmasterPid, tree: true },
        { name: "load generator", pid: process.pid },
      ],
      ctx.stack,
    );
    // A fresh worker's first run is mostly V8 compiling and the standby's cold cache: not measured.
    await runTestWindow(meter, replicaApi, ctx.urn, false, "warm-up");
    // What the earlier windows left to autovacuum (truncations, pushes) is done now: at rest the primary is then at
    // rest, and the little a replica leaves on it is not lost under a background that moves between the windows.
    await ctx.pool.query("VACUUM ANALYZE");
    await ctx.pool.query("CHECKPOINT");
    const rows: { without: Cost; withReplica: Cost }[] = [];
    for (let round = 0; round < REPLICA_ROUNDS; round++) {
      await meter.measureRest(2); // per round: the background's drift (timers, the standby's replay) followed
      const measure = (replica: boolean) =>
        runTestWindow(
          meter,
          replica ? replicaApi : ctx.primary.api,
          ctx.urn,
          false,
          replica ? "runTest without push, a replica" : "runTest without push, the primary",
        ).then((r) => r.cost);
      const first = await measure(round % 2 === 1);
      const second = await measure(round % 2 === 0);
      rows.push(round % 2 === 1 ? { withReplica: first, without: second } : { without: first, withReplica: second });
    }
    // What stays on the primary: its statements through one more run with the replica, by execution time.
    const before = await ctx.stack.statementTimes();
    const last = await runTestWindow(meter, replicaApi, ctx.urn, false, "runTest without push, a replica");
    const left = statementsByTime(before, await ctx.stack.statementTimes(), last.cost.units);
    const ms = (seconds: number) => (seconds * 1e3).toFixed(2);
    const shares = rows.map((r) => r.withReplica.cpu.PostgreSQL! / r.without.cpu.PostgreSQL!);
    process.stdout.write(
      `\nrunTest without push (${ENTITIES} entities) with a read replica, ${REPLICA_ROUNDS} paired rounds, CPU per thousand entities\n\n` +
        `| round | primary, with a replica | primary, without | share | standby, with a replica | worker with / without | load average |\n` +
        `| ---: | ---: | ---: | ---: | ---: | ---: | --- |\n` +
        rows
          .map(
            (r, i) =>
              `| ${i + 1} | ${ms(r.withReplica.cpu.PostgreSQL!)} ms | ${ms(r.without.cpu.PostgreSQL!)} ms | ` +
              `${(100 * shares[i]!).toFixed(1)}% | ${ms(r.withReplica.cpu["PostgreSQL standby"]!)} ms | ` +
              `${ms(r.withReplica.cpu["evaluation worker, replica"]!)} / ${ms(r.without.cpu["evaluation worker"]!)} ms | ${r.withReplica.load} |`,
          )
          .join("\n") +
        `\n\nrunTest without push with a read replica: the primary's CPU ${ms(median(rows.map((r) => r.withReplica.cpu.PostgreSQL!)))} ms ` +
        `per thousand entities against ${ms(median(rows.map((r) => r.without.cpu.PostgreSQL!)))} ms without (medians); ` +
        `median share ${(100 * median(shares)).toFixed(1)}% (goal: under 10%); the primary's statements in one more ` +
        `such run (${last.polls} status polls), by execution time per thousand entities:\n${left}\n`,
    );
  } finally {
    await Promise.all([worker.stop(), started?.stop()]);
  }
}

/** The window's statements, most execution time first (calls and ms per unit), each as its first 110 characters. */
function statementsByTime(
  before: Map<string, { calls: number; ms: number }>,
  after: Map<string, { calls: number; ms: number }>,
  units: number,
): string {
  const rows = [...after].map(([query, a]) => {
    const b = before.get(query) ?? { calls: 0, ms: 0 };
    return { query: query.replace(/\s+/g, " ").slice(0, 110), calls: a.calls - b.calls, ms: a.ms - b.ms };
  });
  const ran = rows.filter((r) => r.calls > 0).sort((x, y) => y.ms - x.ms);
  const all = ran.reduce((a, r) => ({ calls: a.calls + r.calls, ms: a.ms + r.ms }), { calls: 0, ms: 0 });
  const total = `    ${(all.ms / units).toFixed(2).padStart(8)} ms ${(all.calls / units).toFixed(2).padStart(7)} calls  in all (the window's, with what runs beside it)\n`;
  return (
    total +
    ran
      .slice(0, 15)
      .map(
        (r) =>
          `    ${(r.ms / units).toFixed(2).padStart(8)} ms ${(r.calls / units).toFixed(2).padStart(7)} calls  ${r.query}`,
      )
      .join("\n")
  );
}

const us = (seconds: number) => (seconds * 1e6 >= 100 ? (seconds * 1e6).toFixed(0) : (seconds * 1e6).toFixed(1));
const perUnit = (cost: Cost, seconds: number) =>
  cost.unit === "request" ? `${us(seconds)} µs` : `${(seconds * 1e3).toFixed(1)} ms`;

/** One operation as a markdown table (as bench/results/2026-11-24-cost.md records it). */
function printCost(cost: Cost, floorCpu: number): void {
  const rate = cost.units / cost.seconds;
  process.stdout.write(
    `\n${cost.operation}: ${cost.units.toFixed(cost.unit === "request" ? 0 : 2)} × ${cost.unit} in ${cost.seconds.toFixed(1)} s ` +
      `(${rate.toFixed(1)}/s wall); load average ${cost.load}; others' processes used ${cost.othersCores.toFixed(2)} of ${cores()} cores` +
      (cost.note ? `\n  ${cost.note}` : "") +
      `\n\n| process | CPU per ${cost.unit} | RSS at rest | RSS under load (peak) |\n| --- | ---: | ---: | ---: |\n`,
  );
  for (const [name, seconds] of Object.entries(cost.cpu)) {
    if (name === "bare Apollo echo") continue; // idle outside its own window
    const mb = (x: number | undefined) => `${(x ?? 0).toFixed(0)} MB`;
    const ratio =
      name === "gateway" && cost.unit === "request" ? ` (${(seconds / floorCpu).toFixed(2)}× the floor)` : "";
    process.stdout.write(
      `| ${name} | ${perUnit(cost, seconds)}${ratio} | ${mb(cost.restMb[name])} | ${mb(cost.peakMb[name])} |\n`,
    );
  }
  process.stdout.write(
    `\nPostgreSQL statements per ${cost.unit}: ${cost.statements.toFixed(2)} (of which BEGIN/COMMIT/SET and the like ${cost.controlStatements.toFixed(2)}); ` +
      `Redis commands per ${cost.unit}: ${cost.commands.toFixed(2)} (of which script calls ${cost.scriptCommands.toFixed(2)})\n`,
  );
}

/** What every process uses at rest, per second: subtracted from every window (minute-long timers are not in it). */
function printRest(rest: Meter["rest"]): void {
  process.stdout.write(
    `\nat rest (3 s, subtracted from every window): PostgreSQL statements ${rest.statements.toFixed(1)}/s, ` +
      `Redis commands ${rest.commands.toFixed(1)}/s; CPU ` +
      Object.entries(rest.cpu)
        .map(([name, s]) => `${name} ${(s * 1e3).toFixed(1)} ms/s`)
        .join(", ") +
      "\n",
  );
}

/** Units per second that one core of each process could serve (1 / its CPU per unit): the capacity model's inputs. */
function printModel(costs: Cost[]): void {
  const columns = ["gateway", "truncation worker", "evaluation worker", "PostgreSQL", "Redis"];
  process.stdout.write(
    `\ncapacity: units per second one core of each serves (1 / CPU per unit); '-' where it does no work (under 3%)\n\n` +
      `| operation | unit | ${columns.join(" | ")} |\n| --- | --- |${" ---: |".repeat(columns.length)}\n`,
  );
  for (const cost of costs) {
    // Under 3% of what the unit costs the services and servers in all is timers and background work, not the unit's.
    const total = columns.reduce((sum, c) => sum + (cost.cpu[c] ?? 0), 0);
    const cells = columns.map((c) => {
      const s = cost.cpu[c] ?? 0;
      return s < 0.03 * total ? "-" : (1 / s).toFixed(cost.unit === "request" ? 0 : 1);
    });
    process.stdout.write(`| ${cost.operation} | ${cost.unit} | ${cells.join(" | ")} |\n`);
  }
}

/**
 * The model's prediction for n gateways: each gateway runs on one core at most (its work is on one JavaScript thread),
 * so n / (gateway CPU per request); and the machine has `cores` less what other people's processes use, shared by
 * everything a request costs (gateway, PostgreSQL, Redis and the load generator, which here run on the same cores).
 */
function printCheck(model: Cost, runs: Cost[], gatewayNames: string[][]): void {
  const perRequest = Object.entries(model.cpu).reduce((a, [name, s]) => (name === "bare Apollo echo" ? a : a + s), 0);
  process.stdout.write(
    `\ncheck of the model: bearer requests (GraphQL me), ${CONNECTIONS} connections in all; the model's CPU per request ` +
      `${us(perRequest)} µs in all, of which the gateway ${us(model.cpu.gateway!)} µs\n\n` +
      `| gateways | load average | others' cores | predicted: gateway-bound | predicted: machine-bound | predicted | measured | measured / predicted | measured CPU per request, gateways | in all |\n` +
      `| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n`,
  );
  for (const [i, run] of runs.entries()) {
    const n = gatewayNames[i]!.length;
    const gatewayBound = n / model.cpu.gateway!;
    const available = Math.max(0.1, cores() - run.othersCores);
    const machineBound = available / perRequest;
    const predicted = Math.min(gatewayBound, machineBound);
    const measured = run.units / run.seconds;
    const gatewaysCpu = gatewayNames[i]!.reduce((sum, name) => sum + (run.cpu[name] ?? 0), 0);
    const all = Object.values(run.cpu).reduce((a, b) => a + b, 0);
    process.stdout.write(
      `| ${n} | ${run.load} | ${run.othersCores.toFixed(2)} | ${gatewayBound.toFixed(0)} | ${machineBound.toFixed(0)} | ` +
        `${predicted.toFixed(0)} | ${measured.toFixed(0)} | ${(measured / predicted).toFixed(2)} | ${us(gatewaysCpu)} µs | ${us(all)} µs |\n`,
    );
  }
}
