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
 * - beside a hanging neighbour (bench/webhooks/neighbour.ts, on servers of its own): the calm stream's p99 with
 *   another user's 10 hanging receivers and 6,000 of their deliveries pending, against the same without them; and
 *   every process's CPU with that backlog and no new events.
 * BENCH_WEBHOOK_ONLY=neighbour runs only that last part, =delivery only the three before it.
 */
import { createHmac } from "node:crypto";
import http from "node:http";
import { performance } from "node:perf_hooks";
import { Queue, Worker } from "bullmq";
import { closeRedis, createRedis } from "@mdp/queues";
import { createDatabase } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitForOutput, waitUntilReady } from "../../test/support/services";
import { apiClient } from "../evaluate/evaluate.bench";
import { productionSetup } from "../support/production";
import { printReport, type Row } from "../support/report";
import { benchWebhookNeighbour } from "./neighbour";
import {
  ADMIN,
  BATCH,
  CALM_RATE,
  ingest,
  paced,
  percentile,
  proposals,
  startReceiver,
  until,
  type Receiver,
} from "./support";

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 3_000);
const SUBS = Number(process.env.BENCH_WEBHOOK_SUBS ?? 10);
const INGEST_ROUND = Number(process.env.BENCH_WEBHOOK_INGEST ?? 1_500);
const CONCURRENCY = 16;
const ROUNDS = Number(process.env.BENCH_WEBHOOK_ROUNDS ?? 3);
const CALM_SECONDS = Number(process.env.BENCH_WEBHOOK_CALM_SECONDS ?? 10);
const ONLY = process.env.BENCH_WEBHOOK_ONLY ?? "all";

export async function benchWebhooks(): Promise<void> {
  if (!["all", "delivery", "neighbour"].includes(ONLY))
    throw new Error(`BENCH_WEBHOOK_ONLY=${ONLY}: one of all, delivery, neighbour`);
  if (ONLY !== "neighbour") await benchDelivery();
  if (ONLY !== "delivery") await benchWebhookNeighbour();
}

async function benchDelivery(): Promise<void> {
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
