/**
 * bench/webhooks, through the real gateway and webhook-worker processes (production settings, private targets
 * allowed for the local receiver), BENCH_WEBHOOK_ROUNDS rounds (default 3) of each, alternating, medians reported:
 * - delivery throughput: BENCH_WEBHOOK_EVENTS changes (default 3,000) ingested in batches of 100, one subscription;
 *   events per second from the first ingest to the last delivery received (the receiver only counts). Floor: the same
 *   signed bodies added one by one to a queue and POSTed to the same receiver by a bare BullMQ worker in this
 *   process, same concurrency (16), from the first add to the last POST received. Target: at least 0.3 of it (the
 *   ingest itself, the fan-out's transaction, the delivery row's read and write and the owner's check are the price
 *   of at-least-once and of authority at delivery).
 * - the outbox's cost on ingestion: ingest throughput (sequential batches of 100 new datasets, BENCH_WEBHOOK_INGEST,
 *   default 1,500 a round) with BENCH_WEBHOOK_SUBS subscriptions (default 10) matching every event against none, the
 *   deliveries' queue paused (the fan-out's rows and jobs are measured, not the POSTs, which on one machine compete
 *   for the same cores as everything). Target: at least 0.8.
 * - a calm subscription's latency: BENCH_WEBHOOK_CALM_SECONDS (default 10) of 100 events/s (batches of 10 every
 *   100 ms) to one subscription whose receiver answers at once; from each event's creation (its `createdAt`) to its
 *   POST received, p50 and p99. Floor: the same bodies at the same pace added to a bare BullMQ worker's queue, from
 *   the add to the POST received. Target: p99 under 1 s (reported with its ratio to the floor's p99).
 */
import { createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { Queue, Worker } from "bullmq";
import { closeRedis, createRedis } from "@mdp/queues";
import { createDatabase } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { apiClient, type ApiClient } from "../evaluate/evaluate.bench";
import { productionSetup } from "../support/production";
import { printReport, type Row } from "../support/report";

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 3_000);
const SUBS = Number(process.env.BENCH_WEBHOOK_SUBS ?? 10);
const INGEST_ROUND = Number(process.env.BENCH_WEBHOOK_INGEST ?? 1_500);
const BATCH = 100;
const CONCURRENCY = 16;
const ROUNDS = Number(process.env.BENCH_WEBHOOK_ROUNDS ?? 3);
const CALM_SECONDS = Number(process.env.BENCH_WEBHOOK_CALM_SECONDS ?? 10);
const CALM_RATE = 100;
const ADMIN = "urn:li:corpuser:admin";

interface Receiver {
  url: string;
  count: number;
  lastAt: number;
  /** when set, each body's `createdAt` (epoch ms) is read and the time since it recorded here */
  latencies?: number[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => receiver.latencies && chunks.push(chunk));
    req.on("end", () => {
      if (receiver.latencies) {
        const { createdAt } = JSON.parse(Buffer.concat(chunks).toString()) as { createdAt: number };
        receiver.latencies.push(Date.now() - createdAt);
      }
      receiver.count++;
      receiver.lastAt = performance.now();
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: 0,
    lastAt: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

const until = async (what: string, check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const proposals = (prefix: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    entityType: "dataset",
    entityUrn: `urn:li:dataset:(urn:li:dataPlatform:hive,db.${prefix}_${from + i},PROD)`,
    aspectName: "datasetProperties",
    changeType: "UPSERT",
    aspect: { contentType: "application/json", value: JSON.stringify({ description: `d${from + i}` }) },
  }));

async function ingest(api: ApiClient, prefix: string, total: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < total; i += BATCH) {
    await api.post("/gms/aspects?action=ingestProposalBatch", { proposals: proposals(prefix, i, BATCH) });
  }
  return performance.now() - started;
}

export async function benchWebhooks(): Promise<void> {
  const db = await createTestDatabase("bench_webhooks");
  const database = createDatabase(db.url);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const production = productionSetup();
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const prefix = `{${uniqueName("bench-webhooks")}}`;
  const env = {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_DELIVERY_CONCURRENCY: String(CONCURRENCY),
    WEBHOOK_SUBSCRIPTION_CONCURRENCY: String(CONCURRENCY),
    RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: "0",
  };
  const gateway = startService("gateway", { ...env, LOG_LEVEL: "warn" });
  const worker = startService("webhook-worker", { ...env, LOG_LEVEL: "warn" });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const receiver = await startReceiver();
  try {
    await waitUntilReady(baseUrl, gateway);
    await waitForOutput(worker, "worker running").catch(() => undefined);
    const api = apiClient(baseUrl, agent, production.systemClient(ADMIN));
    const subscribe = () =>
      api.graphql(`mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { secret } }`, {
        i: { url: receiver.url, eventTypes: ["MetadataChangeLog_v1"] },
      });

    await ingest(api, "warm", 500);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

    // 1. Delivery throughput, one subscription, in rounds alternating with the floor: from the first ingest to the
    //    last delivery, against a bare BullMQ worker adding and POSTing the same signed bodies.
    await subscribe();
    const rates: number[] = [];
    const floors: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      receiver.count = 0;
      const started = performance.now();
      await ingest(api, `delivered${round}`, EVENTS);
      await until("every delivery", () => receiver.count >= EVENTS, 600_000);
      rates.push((EVENTS / (receiver.lastAt - started)) * 1000);
      const { rows } = await database.pool.query<{ body: string }>(
        "SELECT body FROM webhook_delivery ORDER BY event_seq DESC LIMIT $1",
        [EVENTS],
      );
      const floorMs = await bareWorkerFloor(redisUrl, `{${uniqueName("bench-webhooks-floor")}}`, receiver, rows);
      floors.push((rows.length / floorMs) * 1000);
    }

    // 2. The ingest cost: SUBS subscriptions matching every event (their deliveries paused, so the POSTs do
    //    not compete for the cores) against none, rounds alternating (subscriptions turned on and off).
    await database.pool.query("DELETE FROM webhook_subscription");
    for (let i = 0; i < SUBS; i++) await subscribe();
    // Paused as an open circuit whose probe is a day away: the dispatchers claim none of their deliveries.
    await database.pool.query(
      "UPDATE webhook_subscription SET circuit_state = 'OPEN', circuit_next_probe_at = now() + interval '1 day'",
    );
    const alone: number[] = [];
    const subscribed: number[] = [];
    for (let round = 0; round < ROUNDS * 2; round++) {
      const on = round % 2 === 1;
      await database.pool.query("UPDATE webhook_subscription SET active = $1", [on]);
      const ms = await ingest(api, `cost${round}`, INGEST_ROUND);
      (on ? subscribed : alone).push((INGEST_ROUND / ms) * 1000);
    }

    // 3. A calm subscription's latency: 100 events/s to one subscription (the others of part 2 removed).
    await database.pool.query("DELETE FROM webhook_subscription");
    await subscribe();
    const calmEvents = CALM_SECONDS * CALM_RATE;
    receiver.count = 0;
    receiver.latencies = [];
    await paced(calmEvents, (i, n) =>
      api.post("/gms/aspects?action=ingestProposalBatch", { proposals: proposals("calm", i, n) }),
    );
    await until("every calm delivery", () => receiver.count >= calmEvents, 120_000);
    const calm = receiver.latencies;
    const { rows: calmRows } = await database.pool.query<{ body: string }>(
      "SELECT body FROM webhook_delivery ORDER BY event_seq DESC LIMIT $1",
      [calmEvents],
    );
    receiver.latencies = [];
    await pacedFloor(redisUrl, `{${uniqueName("bench-webhooks-calm")}}`, receiver, calmRows);
    const calmFloor = receiver.latencies;
    receiver.latencies = undefined;

    const ratios = rates.map((r, i) => r / floors[i]!);
    const costs = subscribed.map((r, i) => r / alone[i]!);
    const spread = (xs: number[]) => ({ min: Math.min(...xs), max: Math.max(...xs) });
    const report: Row[] = [
      {
        name: "delivery throughput (commit → receiver)",
        value: `${median(rates).toFixed(0)} events/s`,
        ratio: median(ratios),
        spread: spread(ratios),
        target: ">= 0.3",
        met: median(ratios) >= 0.3,
      },
      {
        name: `ingest with ${SUBS} subscriptions (fan-out)`,
        value: `${median(subscribed).toFixed(0)} aspects/s`,
        ratio: median(costs),
        spread: spread(costs),
        target: ">= 0.8",
        met: median(costs) >= 0.8,
      },
      {
        name: `a calm subscription at ${CALM_RATE} events/s (p99)`,
        value: `p99 ${percentile(calm, 0.99)} ms (p50 ${percentile(calm, 0.5)})`,
        ratio: percentile(calm, 0.99) / Math.max(1, percentile(calmFloor, 0.99)),
        target: "< 1 s",
        met: percentile(calm, 0.99) < 1_000,
      },
    ];
    printReport(
      `bench/webhooks: ${EVENTS} events a round, ${ROUNDS} rounds; ${SUBS} subscriptions for the ingest cost`,
      `a bare BullMQ worker adding and POSTing the same signed bodies (median ${median(floors).toFixed(0)}/s, ` +
        `concurrency ${CONCURRENCY}); ingest with no subscription (median ${median(alone).toFixed(0)} aspects/s, ` +
        `batches of ${BATCH}); the calm stream through a bare BullMQ worker (p99 ${percentile(calmFloor, 0.99)} ms, ` +
        `p50 ${percentile(calmFloor, 0.5)})`,
      report,
    );
  } finally {
    agent.destroy();
    await receiver.close();
    await Promise.all([gateway.stop(), worker.stop()]);
    await database.close();
    await db.drop();
  }
}

/**
 * The floors' bare BullMQ worker: signs each job's body and POSTs it to the receiver (no keep-alive, as the webhook
 * worker's POSTs), CONCURRENCY at once, for as long as `run` (given the queue) takes; then everything is removed.
 */
async function withBareWorker<T>(
  redisUrl: string,
  prefix: string,
  receiver: Receiver,
  run: (queue: Queue) => Promise<T>,
): Promise<T> {
  const connection = createRedis(redisUrl, "worker");
  const queue = new Queue("floor", { connection, prefix });
  const postAgent = new http.Agent({ keepAlive: false });
  const target = new URL(receiver.url);
  const worker = new Worker(
    "floor",
    async (job) => {
      const body = (job.data as { body: string }).body;
      const t = Math.floor(Date.now() / 1000);
      const signature = `t=${t},v1=${createHmac("sha256", "whsec_floor").update(`${t}.${body}`).digest("hex")}`;
      await new Promise<void>((resolve, reject) => {
        const req = http.request(
          {
            hostname: target.hostname,
            port: target.port,
            path: target.pathname,
            method: "POST",
            agent: postAgent,
            headers: { "content-type": "application/json", "mdp-signature": signature },
          },
          (res) => {
            res.resume();
            res.on("end", resolve);
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    },
    { connection, prefix, concurrency: CONCURRENCY },
  );
  try {
    await worker.waitUntilReady();
    receiver.count = 0;
    return await run(queue);
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    postAgent.destroy();
    await closeRedis(connection);
  }
}

/** The throughput floor: every body added at once, from the first add to the last POST received (ms). */
function bareWorkerFloor(redisUrl: string, prefix: string, receiver: Receiver, rows: Array<{ body: string }>) {
  return withBareWorker(redisUrl, prefix, receiver, async (queue) => {
    const started = performance.now();
    await Promise.all(rows.map((r, i) => queue.add("post", { body: r.body }, { jobId: `f${i}` })));
    await until("the floor's POSTs", () => receiver.count >= rows.length, 600_000);
    return receiver.lastAt - started;
  });
}

const percentile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? NaN;

/** `send(first, n)` for `total` items at CALM_RATE a second, in tenths of a second; the sends overlap if they lag. */
async function paced(total: number, send: (first: number, n: number) => Promise<unknown>): Promise<void> {
  const perTick = CALM_RATE / 10;
  const started = performance.now();
  const sent: Array<Promise<unknown>> = [];
  for (let i = 0; i < total; i += perTick) {
    const due = started + (i / perTick) * 100;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent.push(send(i, Math.min(perTick, total - i)));
  }
  await Promise.all(sent);
}

/** The calm stream's floor: the same bodies at the same pace through the bare worker (createdAt: the add). */
function pacedFloor(redisUrl: string, prefix: string, receiver: Receiver, rows: Array<{ body: string }>) {
  return withBareWorker(redisUrl, prefix, receiver, async (queue) => {
    await paced(rows.length, (first, n) =>
      Promise.all(
        rows.slice(first, first + n).map((r, k) => {
          const body = JSON.stringify({ ...(JSON.parse(r.body) as object), createdAt: Date.now() });
          return queue.add("post", { body }, { jobId: `c${first + k}` });
        }),
      ),
    );
    await until("the calm floor's POSTs", () => receiver.count >= rows.length, 120_000);
  });
}
