/**
 * Webhooks under a worker's death (docs/webhooks.md), with the real gateway and webhook-worker processes and a real
 * HTTP receiver: a stream of ingested changes is delivered while the worker is killed with SIGKILL mid-delivery and
 * started again; every event arrives, none is lost, and a duplicate (at-least-once) carries the same event id and
 * the same body, correctly signed.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { verifyWebhookSignature, WEBHOOK_HEADERS } from "@mdp/webhooks";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  startService,
  systemClient,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const headers = systemClient();
const EVENTS = 300;
const BATCH = 10;
const dataset = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.hooks_e2e_${i},PROD)`;

interface Got {
  eventId: string;
  deliveryId: string;
  body: string;
  signed: boolean;
}

describe("webhooks across a worker killed mid-delivery", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let gateway: RunningService;
  const workers: RunningService[] = [];
  let baseUrl: string;
  let env: Record<string, string>;
  let server: http.Server;
  let secret = "";
  const got: Got[] = [];

  const startWorker = async () => {
    const worker = startService("webhook-worker", env);
    workers.push(worker);
    await waitForOutput(worker, "worker running");
    return worker;
  };
  const ingest = async (from: number, to: number) => {
    for (let i = from; i < to; i += BATCH) {
      const proposals = Array.from({ length: Math.min(BATCH, to - i) }, (_, k) => ({
        entityType: "dataset",
        entityUrn: dataset(i + k),
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: `change ${i + k}` }) },
      }));
      const res = await fetch(`${baseUrl}/gms/aspects?action=ingestProposalBatch`, {
        method: "POST",
        headers,
        body: JSON.stringify({ proposals }),
      });
      if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
    }
  };
  const distinct = () => new Set(got.map((g) => g.eventId));

  beforeAll(async () => {
    // The receiver answers after a moment, so deliveries are in flight when the worker dies.
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        got.push({
          eventId: req.headers[WEBHOOK_HEADERS.eventId] as string,
          deliveryId: req.headers[WEBHOOK_HEADERS.deliveryId] as string,
          body,
          signed: verifyWebhookSignature(secret, req.headers[WEBHOOK_HEADERS.signature] as string, body),
        });
        setTimeout(() => res.writeHead(200).end("ok"), 20);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    db = await createTestDatabase("e2e_webhooks");
    database = createDatabase(db.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    env = {
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: `{${uniqueName("e2e-webhooks")}}`,
      PORT: String(port),
      WEBHOOK_POLL_MS: "50",
      WEBHOOK_RETRY_SCHEDULE: "0,200ms,400ms,800ms,1600ms,3200ms,6400ms",
      WEBHOOK_DELIVERY_CONCURRENCY: "8",
      WEBHOOK_SUBSCRIPTION_CONCURRENCY: "8",
    };
    gateway = startService("gateway", env);
    await waitUntilReady(baseUrl, gateway);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([gateway, ...workers].map((s) => s?.stop("SIGKILL")));
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await database?.close();
    await db?.drop();
  });

  it("delivers every event after a SIGKILL mid-delivery, none lost, duplicates with the same event id", async () => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        query: `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { secret subscription { id } } }`,
        variables: {
          i: {
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
            eventTypes: ["MetadataChangeLog_v1"],
          },
        },
      }),
    });
    const created = (await res.json()) as { data: { createWebhookSubscription: { secret: string } } };
    secret = created.data.createWebhookSubscription.secret;
    const first = await startWorker();

    const ingesting = ingest(0, EVENTS / 2);
    await waitFor("some deliveries", async () => distinct().size >= 30, 30_000);
    first.process.kill("SIGKILL");
    await first.stop();
    const beforeRestart = distinct().size;
    await ingesting;
    await ingest(EVENTS / 2, EVENTS); // while no worker runs: the outbox keeps them
    await startWorker();

    // Deliveries the dead worker held come back when their lease ends (WEBHOOK_TIMEOUT_MS + 15 s) and the settle
    // chore (every 15 s) lets them go; the others were never held and are claimed by the new worker at once.
    await waitFor("every event delivered", async () => distinct().size >= EVENTS, 90_000);
    // Every event the ingests wrote, by its id (its position in the stream, given once it is sequenced).
    const { rows } = await database.pool.query<{ id: string }>(
      "SELECT seq::text AS id FROM platform_event WHERE event_type = 'MetadataChangeLog_v1' AND entity_type = 'dataset'",
    );
    expect(rows).toHaveLength(EVENTS);
    const expected = new Set(rows.map((r) => r.id));
    expect(distinct()).toEqual(expected);
    expect(beforeRestart).toBeLessThan(EVENTS);
    // Duplicates: the same event id, the same body, each signed (a receiver dedups on the id).
    const byEvent = new Map<string, Got[]>();
    for (const g of got) byEvent.set(g.eventId, [...(byEvent.get(g.eventId) ?? []), g]);
    for (const copies of byEvent.values()) {
      expect(new Set(copies.map((c) => c.body)).size).toBe(1);
      expect(JSON.parse(copies[0]!.body)).toMatchObject({ id: copies[0]!.eventId });
    }
    expect(got.every((g) => g.signed)).toBe(true);
    await waitFor(
      "the delivery log to say so",
      async () =>
        (
          await database.pool.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM webhook_delivery WHERE status = 'DELIVERED'",
          )
        ).rows[0]!.n === EVENTS,
      30_000,
    );
    const { rows: log } = await database.pool.query<{ status: string; n: number }>(
      "SELECT status, count(*)::int AS n FROM webhook_delivery GROUP BY status",
    );
    expect(log).toEqual([{ status: "DELIVERED", n: EVENTS }]);
    const duplicates = got.length - distinct().size;
    process.stdout.write(`webhook e2e: ${EVENTS} events, ${got.length} POSTs, ${duplicates} duplicates\n`);
  }, 180_000);
});
