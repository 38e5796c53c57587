/**
 * bench/webhooks, through the real gateway and evaluation-worker processes (production settings, private targets
 * allowed for the local receiver):
 * - delivery throughput: BENCH_WEBHOOK_EVENTS changes (default 3,000) ingested in batches of 100, one subscription;
 *   events per second from the first ingest to the last delivery received (signed, verified by nobody: the receiver
 *   only counts). Floor: the same number of signed POSTs of the same bodies to the same receiver made by a bare
 *   BullMQ worker in this process, with the same concurrency (WEBHOOK_DELIVERY_CONCURRENCY, 16), jobs queued in bulk,
 *   in the same run. Target: at least 0.3 of it (the fan-out's transaction, the delivery row's reads and writes and the
 *   owner's privileges read at each delivery are the price of at-least-once and authority at delivery).
 * - the outbox's cost on ingestion: ingest throughput (sequential batches of 100 new datasets) with BENCH_WEBHOOK_SUBS
 *   subscriptions (default 10) delivering every event, against the same ingest with none, same run. Target: at
 *   least 0.8.
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
const INGEST_ROUND = Number(process.env.BENCH_WEBHOOK_INGEST ?? 3_000);
const BATCH = 100;
const CONCURRENCY = 16;
const ADMIN = "urn:li:corpuser:admin";

interface Receiver {
  url: string;
  count: number;
  lastAt: number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
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
  const worker = startService("evaluation-worker", { ...env, LOG_LEVEL: "warn" });
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

    // 1. The ingest cost: no subscription, then SUBS subscriptions delivering every event.
    await ingest(api, "warm", 500);
    const alone = await ingest(api, "alone", INGEST_ROUND);
    for (let i = 0; i < SUBS; i++) await subscribe();
    receiver.count = 0;
    const withSubs = await ingest(api, "subscribed", INGEST_ROUND);
    await until("the subscribed deliveries", () => receiver.count >= INGEST_ROUND * SUBS, 600_000);
    await database.pool.query("DELETE FROM webhook_subscription");

    // 2. Delivery throughput, one subscription: from the first ingest to the last delivery.
    await subscribe();
    receiver.count = 0;
    const started = performance.now();
    await ingest(api, "delivered", EVENTS);
    await until("every delivery", () => receiver.count >= EVENTS, 600_000);
    const deliveredMs = receiver.lastAt - started;
    const { rows } = await database.pool.query<{ body: string }>(
      "SELECT body FROM webhook_delivery ORDER BY event_seq DESC LIMIT $1",
      [EVENTS],
    );

    // Floor: a bare BullMQ worker POSTing the same signed bodies to the same receiver, same concurrency.
    const floorMs = await bareWorkerFloor(redisUrl, `{${uniqueName("bench-webhooks-floor")}}`, receiver, rows);

    const rate = (EVENTS / deliveredMs) * 1000;
    const floorRate = (rows.length / floorMs) * 1000;
    const ingestAlone = (INGEST_ROUND / alone) * 1000;
    const ingestSubs = (INGEST_ROUND / withSubs) * 1000;
    const report: Row[] = [
      {
        name: "delivery throughput (commit → receiver)",
        value: `${rate.toFixed(0)} events/s`,
        ratio: rate / floorRate,
        target: ">= 0.3",
        met: rate / floorRate >= 0.3,
      },
      {
        name: `ingest with ${SUBS} subscriptions delivering`,
        value: `${ingestSubs.toFixed(0)} aspects/s`,
        ratio: ingestSubs / ingestAlone,
        target: ">= 0.8",
        met: ingestSubs / ingestAlone >= 0.8,
      },
    ];
    printReport(
      `bench/webhooks: ${EVENTS} events, ${SUBS} subscriptions for the ingest cost`,
      `a bare BullMQ worker POSTing the same ${rows.length} signed bodies (${floorRate.toFixed(0)}/s, concurrency ${CONCURRENCY}); ` +
        `ingest with no subscription ${ingestAlone.toFixed(0)} aspects/s (batches of ${BATCH})`,
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

async function bareWorkerFloor(
  redisUrl: string,
  prefix: string,
  receiver: Receiver,
  rows: Array<{ body: string }>,
): Promise<number> {
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
    { connection, prefix, concurrency: CONCURRENCY, autorun: false },
  );
  try {
    await queue.addBulk(rows.map((r, i) => ({ name: "post", data: { body: r.body }, opts: { jobId: `f${i}` } })));
    receiver.count = 0;
    const started = performance.now();
    void worker.run();
    await until("the floor's POSTs", () => receiver.count >= rows.length, 600_000);
    return receiver.lastAt - started;
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    postAgent.destroy();
    await closeRedis(connection);
  }
}
