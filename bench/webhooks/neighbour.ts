/**
 * bench/webhooks, beside a hanging neighbour: the gateway and a webhook worker as real processes (production settings
 * and the worker's default concurrency: 16 POSTs, 2 per subscription, 8 per owner; 10 s timeout) on a PostgreSQL and a
 * Redis of the part's own, so that every CPU second they count is this part's.
 * 1. user A's calm subscription alone: BENCH_WEBHOOK_NEIGHBOUR_SECONDS (default 10) of 100 events/s, p50 and p99 from
 *    each event's creation to its POST received; then 10 s with no new event: every process's CPU;
 * 2. user B gets 10 subscriptions whose receivers never answer (each POST held until the worker's timeout) and 600
 *    PENDING deliveries each (rows inserted, as by a fan-out), and the part waits until B's POSTs hold the 8 slots
 *    an owner may; A's calm stream again: p99 beside ÷ p99 alone, target ≤ 1.5;
 * 3. 10 s with that backlog and no new event, from a second after A's last delivery: each process's CPU in % of a
 *    core (gateway, webhook worker, PostgreSQL's every process, Redis), target < 3% each.
 * B's receivers are released and closed at the end.
 */
import http from "node:http";
import { performance } from "node:perf_hooks";
import { createDatabase } from "@mdp/db";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { startPrivateStack } from "../cost/private-stack";
import { cpuSeconds, loadAverage, type Measured } from "../cost/proc";
import { apiClient } from "../evaluate/evaluate.bench";
import { productionSetup } from "../support/production";
import { printReport, type Row } from "../support/report";
import { ADMIN, ingest, paced, percentile, proposals, startReceiver, until } from "./support";

const SECONDS = Number(process.env.BENCH_WEBHOOK_NEIGHBOUR_SECONDS ?? 10);
const NEIGHBOUR = "urn:li:corpuser:bench-webhook-neighbour";
const HANGING = 10;
const PENDING_EACH = 600;
/** webhookOwnerConcurrency at the default WEBHOOK_DELIVERY_CONCURRENCY (16) and SUBSCRIPTION_CONCURRENCY (2) */
const OWNER_SLOTS = 8;
const IDLE_SECONDS = 10;
const CREATE = `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { subscription { id } } }`;

/** Receivers that read each POST and never answer until released (as a receiver that hangs past the timeout). */
async function startHanging(): Promise<{ url: string; arrivals: number[]; close(): Promise<void> }> {
  const arrivals: number[] = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      arrivals.push(Date.now());
      held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The 5 statements that took the most execution time between two pg_stat_statements reads: calls, mean ms. */
function heaviest(
  before: Map<string, { calls: number; ms: number }>,
  after: Map<string, { calls: number; ms: number }>,
) {
  return [...after]
    .map(([query, { calls, ms }]) => ({
      query,
      calls: calls - (before.get(query)?.calls ?? 0),
      ms: ms - (before.get(query)?.ms ?? 0),
    }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map(
      (x) =>
        `    ${x.ms.toFixed(0)} ms, ${x.calls} calls, ${(x.ms / Math.max(1, x.calls)).toFixed(2)} ms each: ` +
        `${x.query.replace(/\s+/g, " ").slice(0, 90)}\n`,
    )
    .join("");
}

/** CPU of each process over `seconds`, in % of a core. */
async function idleCpu(processes: Measured[], seconds: number): Promise<Record<string, number>> {
  const before = processes.map(cpuSeconds);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const elapsed = (performance.now() - started) / 1000;
  return Object.fromEntries(processes.map((p, i) => [p.name, ((cpuSeconds(p) - before[i]!) / elapsed) * 100]));
}

export async function benchWebhookNeighbour(): Promise<void> {
  const stack = await startPrivateStack();
  const database = createDatabase(stack.databaseUrl);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const production = productionSetup();
  const env = {
    ...production.env,
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    QUEUE_PREFIX: `{${uniqueName("bench-webhooks-neighbour")}}`,
    PORT: String(port),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: "0",
    LOG_LEVEL: "warn",
  };
  const gateway = startService("gateway", env);
  const worker = startService("webhook-worker", env);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const calm = await startReceiver();
  const hanging: Array<Awaited<ReturnType<typeof startHanging>>> = [];
  try {
    await waitUntilReady(baseUrl, gateway);
    await waitForOutput(worker, "worker running").catch(() => undefined);
    const processes: Measured[] = [
      { name: "gateway", pid: gateway.process.pid! },
      { name: "webhook worker", pid: worker.process.pid! },
      { name: "PostgreSQL", pid: stack.postmasterPid, tree: true },
      { name: "Redis", pid: stack.redisPid },
    ];
    const api = apiClient(baseUrl, agent, production.systemClient(ADMIN));
    const neighbour = apiClient(baseUrl, agent, production.systemClient(NEIGHBOUR));
    await api.graphql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
      i: { name: "neighbour", state: "ACTIVE", privileges: ["GET_ENTITY"], actors: { users: [NEIGHBOUR] } },
    });
    await ingest(api, "warm", 500);
    await api.graphql(CREATE, { i: { url: calm.url, eventTypes: ["MetadataChangeLog_v1"] } });

    let stream = 0;
    /** A's calm stream: SECONDS of 100 events/s; each one's latency (ms) once all are delivered. */
    const calmStream = async (): Promise<{
      latencies: number[];
      slowest: string;
      started: number;
      statements: string;
    }> => {
      const events = SECONDS * 100;
      const prefix = `calm${stream++}`;
      calm.count = 0;
      calm.latencies = [];
      calm.arrivals = [];
      const started = Date.now();
      const statementsBefore = await stack.statementTimes();
      await paced(events, (i, n) =>
        api.post("/gms/aspects?action=ingestProposalBatch", { proposals: proposals(prefix, i, n) }),
      );
      await until("every calm delivery", () => calm.count >= events, 120_000);
      const statements = heaviest(statementsBefore, await stack.statementTimes());
      const { latencies, arrivals } = calm;
      calm.latencies = calm.arrivals = undefined;
      // When the slowest 1% arrived (s into the stream): clustered at B's timeouts, or spread as a busy machine's are.
      const slow = latencies
        .map((ms, i) => ({ ms, at: (arrivals![i]! - started) / 1000 }))
        .sort((a, b) => b.ms - a.ms)
        .slice(0, Math.ceil(latencies.length / 100))
        .sort((a, b) => a.at - b.at);
      const slowest = slow.map((x) => `${x.ms}@${x.at.toFixed(1)}`).join(" ");
      // The idle windows start a second after the last delivery: the fan-out's poll slows once a second passes.
      await new Promise((r) => setTimeout(r, 1_000));
      return { latencies, slowest, started, statements };
    };

    await calmStream(); // warms the delivery path; not counted
    const { latencies: alone, slowest: slowestAlone, statements: statementsAlone } = await calmStream();
    const loadAlone = loadAverage();
    const idleAlone = await idleCpu(processes, IDLE_SECONDS);

    // B: 10 subscriptions to receivers that never answer, each on a dataset of its own (A's stream is not theirs).
    const ids: string[] = [];
    for (let i = 0; i < HANGING; i++) {
      const receiver = await startHanging();
      hanging.push(receiver);
      const urn = `urn:li:dataset:(urn:li:dataPlatform:hive,db.neighbour_${i},PROD)`;
      const created = (await neighbour.graphql(CREATE, {
        i: { url: receiver.url, eventTypes: ["MetadataChangeLog_v1"], entityUrn: urn },
      })) as { createWebhookSubscription: { subscription: { id: string } } };
      ids.push(created.createWebhookSubscription.subscription.id);
    }
    await database.pool.query(
      `INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, status, body, entity_type,
                                     next_attempt_at)
       SELECT gen_random_uuid(), s, 1000000 + g, (1000000 + g)::text, 'MetadataChangeLog_v1', 'PENDING', '{}',
              'dataset', now()
         FROM unnest($1::uuid[]) s, generate_series(1, $2::int) g`,
      [ids, PENDING_EACH],
    );
    const held = () => hanging.reduce((n, r) => n + r.arrivals.length, 0);
    await until(`B's POSTs holding ${OWNER_SLOTS} slots`, () => held() >= OWNER_SLOTS, 30_000);

    const {
      latencies: beside,
      slowest: slowestBeside,
      started: besideStarted,
      statements: statementsBeside,
    } = await calmStream();
    const timeouts = hanging
      .flatMap((r) => r.arrivals)
      .filter((at) => at >= besideStarted)
      .sort((a, b) => a - b)
      .map((at) => ((at - besideStarted) / 1000).toFixed(1));
    const loadBeside = loadAverage();
    const idle = await idleCpu(processes, IDLE_SECONDS);
    const { rows } = await database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_delivery WHERE status = 'PENDING' AND subscription_id = ANY($1::uuid[])`,
      [ids],
    );

    const p = (xs: number[], q: number) => percentile(xs, q);
    const ratio = p(beside, 0.99) / Math.max(1, p(alone, 0.99));
    const report: Row[] = [
      {
        name: `A's calm stream beside B's ${HANGING} hanging receivers (p99)`,
        value: `p99 ${p(beside, 0.99)} ms (p50 ${p(beside, 0.5)})`,
        ratio,
        target: "<= 1.5",
        met: ratio <= 1.5,
      },
      ...processes.map((proc) => ({
        name: `idle with B's backlog: ${proc.name}, % of a core`,
        value: `${idle[proc.name]!.toFixed(2)}% (without ${idleAlone[proc.name]!.toFixed(2)}%)`,
        ratio: idle[proc.name]! / Math.max(0.01, idleAlone[proc.name]!),
        target: "< 3%",
        met: idle[proc.name]! < 3,
      })),
    ];
    printReport(
      `bench/webhooks beside a hanging neighbour: ${SECONDS} s of 100 events/s for A, alone then beside B's ` +
        `${HANGING} hanging receivers with ${rows[0]!.n} deliveries pending (${held()} POSTs received by them); ` +
        `idle windows of ${IDLE_SECONDS} s (load average ${loadAlone} alone, ${loadBeside} beside)`,
      `A's calm stream alone (p99 ${p(alone, 0.99)} ms, p50 ${p(alone, 0.5)}); for the CPU, the same processes idle ` +
        `without B's backlog`,
      report,
    );
    process.stdout.write(
      `  slowest 1% (ms@s into the stream): alone ${slowestAlone}\n  beside ${slowestBeside}\n` +
        `  B's POSTs during and after the stream beside (s into it; each a slot freed by a timeout): ${timeouts.join(" ")}\n` +
        `  PostgreSQL's heaviest statements in the stream alone:\n${statementsAlone}  beside:\n${statementsBeside}`,
    );
  } finally {
    agent.destroy();
    await Promise.all([calm.close(), ...hanging.map((r) => r.close())]);
    await Promise.all([gateway.stop(), worker.stop()]);
    await database.close();
    await stack.stop();
  }
}
