/**
 * Webhook delivery's isolation and receiver-facing contract (docs/webhooks.md), against the real gateway, the
 * evaluation worker's webhooks in process (real PostgreSQL) and real HTTP receivers on 127.0.0.1:
 * - one user's ten hanging receivers with a backlog of 6,000 deliveries do not delay another user's deliveries beyond
 *   a bound, and that backlog costs an idle worker next to nothing (claim rounds and CPU over a window measured);
 * - a subscription's pending deliveries are bounded (the oldest dropped as SKIPPED, counted);
 * - a receiver that keeps failing opens its subscription's circuit (paused, probed, closed by a success), and one
 *   failing for WEBHOOK_DISABLE_AFTER_DAYS is turned off with an event and an audit row;
 * - each pending delivery shows its next attempt (WEBHOOK_RETRY_SCHEDULE);
 * - deliveries verify with the official `standardwebhooks` library, before and across a secret's rotation;
 * - the worker's metrics count deliveries, their latency, what is pending and open circuits.
 * Its users and documents: support/webhook-isolation.ts.
 */
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { type Config } from "@mdp/core";
import { STANDARD_WEBHOOK_HEADERS, verifyWebhookSignature, WEBHOOK_HEADERS } from "@mdp/webhooks";
import { registerWebhookGauges, webhookRegistry } from "webhook-worker";
import {
  describeDatasets,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { startReceiver, type Receiver } from "./support/webhook-receiver";
import { startWebhookWorker } from "./support/webhook-worker";
import {
  dataset,
  CREATE,
  DELIVERIES,
  SUBSCRIPTIONS,
  Delivery,
  Subscription,
  holds,
  sleep,
} from "./support/webhook-isolation";

describe("webhook isolation", () => {
  let h: Harness;
  const receivers: Receiver[] = [];

  const gql = async <T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, actor = ROOT) => {
    const body = (await h.graphql(query, variables, systemClientHeaders(actor))).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data as T;
  };
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const subscribe = async (actor: string, url: string, entityUrn: string) =>
    (
      await gql<{ createWebhookSubscription: { secret: string; subscription: { id: string } } }>(
        CREATE,
        { i: { url, eventTypes: ["MetadataChangeLog_v1"], entityUrn } },
        actor,
      )
    ).createWebhookSubscription;
  const ingest = (urn: string, description: string) => describeDatasets(h, [urn], description);
  const deliveries = async (subscriptionId: string) =>
    (await gql<{ listWebhookDeliveries: { deliveries: Delivery[] } }>(DELIVERIES, { i: { subscriptionId } }))
      .listWebhookDeliveries.deliveries;
  const subscription = async (id: string) =>
    (
      await gql<{ listWebhookSubscriptions: { subscriptions: Subscription[] } }>(SUBSCRIPTIONS, {
        i: { all: true, count: 100 },
      })
    ).listWebhookSubscriptions.subscriptions.find((s) => s.id === id)!;
  /** Deletes the subscriptions (their delivery logs with them): what one test leaves is no other's work. */
  const forget = (ids: string[]) =>
    h.database.pool.query(`DELETE FROM webhook_subscription WHERE id = ANY($1::uuid[])`, [ids]);

  beforeAll(async () => {
    h = await startGateway({
      WEBHOOK_TIMEOUT_MS: "60000",
      WEBHOOK_DELIVERY_CONCURRENCY: "16",
      WEBHOOK_SUBSCRIPTION_CONCURRENCY: "2",
      MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: "10",
    });
  });
  afterAll(async () => {
    for (const r of receivers) r.release();
    await Promise.all(receivers.map((r) => r.close()));
    await h?.close();
  });

  it("one user's 10 hanging receivers with 6,000 deliveries pending neither delay another user's deliveries nor cost an idle worker", async () => {
    const hog = `urn:li:corpuser:isolation-hog-${randomUUID()}`;
    const other = `urn:li:corpuser:isolation-other-${randomUUID()}`;
    await grant(h, hog, ["GET_ENTITY"]);
    await grant(h, other, ["GET_ENTITY"]);
    /** CPU the test's process used over `ms` (ms of CPU). */
    const cpuOver = async (ms: number) => {
      const from = process.cpuUsage();
      await sleep(ms);
      const used = process.cpuUsage(from);
      return (used.user + used.system) / 1000;
    };
    const windowMs = 5_000;
    // The gateway alone, idle (once its start has settled): what the process costs without the worker.
    await sleep(2_000);
    const baselineCpuMs = await cpuOver(windowMs);
    const w = await startWebhookWorker(h, { loop: true });
    const quick = await receiver();
    const mine = await subscribe(other, quick.url, dataset("quick"));
    /** Each event's time from its ingestion to its arrival at the other user's receiver (ms). */
    const latencies = async (n: number) => {
      const took: number[] = [];
      for (let i = 0; i < n; i++) {
        const before = quick.received.length;
        const started = Date.now();
        await ingest(dataset("quick"), `change ${randomUUID()}`);
        await holds(() => expect(quick.received.length).toBe(before + 1), { timeoutMs: 20_000 });
        took.push(quick.received.at(-1)!.at - started);
      }
      return took.sort((a, b) => a - b);
    };
    const hogIds: string[] = [];
    try {
      const alone = await latencies(10);
      // The hog: ten subscriptions whose receivers never answer, 600 deliveries waiting for each.
      const hanging: Receiver[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await receiver();
        r.respond = () => "hang";
        hanging.push(r);
        hogIds.push((await subscribe(hog, r.url, dataset(`hog-${i}`))).subscription.id);
      }
      await h.database.pool.query(
        `INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, status, body, entity_type,
                                       next_attempt_at)
         SELECT gen_random_uuid(), s, 1000000 + g, (1000000 + g)::text, 'MetadataChangeLog_v1', 'PENDING', '{}',
                'dataset', now()
           FROM unnest($1::uuid[]) s, generate_series(1, 600) g`,
        [hogIds],
      );
      // Half the worker's slots (8) are the hog's, each held until the 60 s timeout.
      await holds(() => expect(hanging.reduce((n, r) => n + r.received.length, 0)).toBe(8), { timeoutMs: 10_000 });
      const crowded = await latencies(10);
      const max = (xs: number[]) => xs.at(-1)!;
      process.stdout.write(
        `other user's delivery latency, ms: alone ${JSON.stringify(alone)}; ` +
          `beside 10 hanging receivers with 6,000 pending ${JSON.stringify(crowded)}\n`,
      );
      // The review measured 2–10 s here; with the hog present the worst stays within a second of the worst alone.
      expect(max(crowded)).toBeLessThan(Math.max(1_500, max(alone) + 1_000));

      // Idle with that backlog and no new events: a claim round per idle poll (1 s), no loop, little CPU.
      await sleep(1_000);
      const claims = w.webhooks.dispatcher.claims;
      const cpuMs = await cpuOver(windowMs);
      const rounds = w.webhooks.dispatcher.claims - claims;
      const pending = await h.database.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_delivery WHERE status = 'PENDING' AND subscription_id = ANY($1::uuid[])`,
        [hogIds],
      );
      process.stdout.write(
        `idle ${windowMs} ms with ${pending.rows[0]!.n} deliveries pending: ${rounds} claim rounds, ` +
          `${cpuMs.toFixed(0)} ms CPU of the test process (gateway and worker together, ` +
          `${((cpuMs / windowMs) * 100).toFixed(1)}% of a core; the gateway alone before: ` +
          `${((baselineCpuMs / windowMs) * 100).toFixed(1)}%)\n`,
      );
      expect(pending.rows[0]!.n).toBe(6_000);
      expect(rounds).toBeLessThanOrEqual(8);
      // The whole test process (jest, the gateway and the worker): the worker's share is the claim rounds above.
      expect(cpuMs / windowMs).toBeLessThan(0.1);
      // The worker's own share, beside the gateway's (about 2% of a core measured, most of it the fan-out's poll
      // every WEBHOOK_POLL_MS, none of it the backlog): bounded with room for a busy machine's noise.
      expect((cpuMs - baselineCpuMs) / windowMs).toBeLessThan(0.05);
      expect(hanging.reduce((n, r) => n + r.received.length, 0)).toBe(8); // nothing more tried meanwhile
    } finally {
      await forget([...hogIds, mine.subscription.id]);
      for (const r of receivers) r.release();
      await w.close();
    }
  }, 120_000);

  it("bounds a subscription's pending deliveries: past WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION the oldest are dropped, counted", async () => {
    const w = await startWebhookWorker(h, { config: { WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION: 5 } });
    const r = await receiver();
    const { subscription: s } = await subscribe(ROOT, r.url, dataset("bounded"));
    try {
      await w.pause();
      for (let i = 0; i < 8; i++) await ingest(dataset("bounded"), `change ${i}`);
      await w.fanOut();
      const log = await deliveries(s.id);
      const bySeq = [...log].sort((a, b) => Number(a.eventSeq) - Number(b.eventSeq));
      expect(bySeq.map((d) => d.status)).toEqual([...Array(3).fill("SKIPPED"), ...Array(5).fill("PENDING")]);
      expect(bySeq[0]!.error).toMatch(/more than 5 deliveries .* pending \(WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION\)/);
      expect((await subscription(s.id)).droppedDeliveries).toBe(3);
      w.resume();
      await holds(() => expect(r.received).toHaveLength(5));
    } finally {
      await forget([s.id]);
      await w.close();
    }
  });

  it("shows each pending delivery's next attempt, as WEBHOOK_RETRY_SCHEDULE says", async () => {
    const w = await startWebhookWorker(h, { config: { WEBHOOK_RETRY_SCHEDULE: [0, 5_000, 60_000] } });
    const r = await receiver();
    r.respond = () => 503;
    const { subscription: s } = await subscribe(ROOT, r.url, dataset("scheduled"));
    try {
      await ingest(dataset("scheduled"), "retried in 5 s");
      await w.fanOut();
      await holds(() => expect(r.received).toHaveLength(1));
      await holds(async () => expect((await deliveries(s.id))[0]).toMatchObject({ status: "PENDING", attempts: 1 }));
      const [d] = await deliveries(s.id);
      expect(d!.nextAttemptAt! - d!.updatedAt).toBeGreaterThanOrEqual(4_900);
      expect(d!.nextAttemptAt! - d!.updatedAt).toBeLessThanOrEqual(5_100);
      r.respond = () => 200;
      await holds(() => expect(r.received).toHaveLength(2), { timeoutMs: 10_000 });
      expect(r.received[1]!.at - r.received[0]!.at).toBeGreaterThanOrEqual(4_900);
      await holds(async () =>
        expect((await deliveries(s.id))[0]).toMatchObject({ status: "DELIVERED", nextAttemptAt: null }),
      );
    } finally {
      await forget([s.id]);
      await w.close();
    }
  });

  it("opens a failing receiver's circuit (paused, probed at a growing interval, closed by a success), and turns off one failing for days", async () => {
    const config: Partial<Config> = {
      WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => 50),
      WEBHOOK_CIRCUIT_FAILURES: 3,
      WEBHOOK_CIRCUIT_PROBE_MS: 500,
    };
    const w = await startWebhookWorker(h, { config });
    const r = await receiver();
    r.respond = () => 500;
    const { subscription: s } = await subscribe(ROOT, r.url, dataset("circuit"));
    try {
      for (let i = 0; i < 4; i++) await ingest(dataset("circuit"), `change ${i}`);
      await w.fanOut();
      await holds(async () => expect((await subscription(s.id)).circuit.state).toBe("OPEN"));
      const open = await subscription(s.id);
      expect(open.circuit.openedAt).toEqual(expect.any(Number));
      expect(open.circuit.nextProbeAt).toBeGreaterThan(open.circuit.openedAt!);
      expect(open.failingSince).toEqual(expect.any(Number));
      // While open, one probe at a time at 0.5 s, 1 s, 2 s…: a handful of requests in 2.5 s, not one per 50 ms.
      const before = r.received.length;
      await sleep(2_500);
      const probes = r.received.length - before;
      expect(probes).toBeGreaterThanOrEqual(1);
      expect(probes).toBeLessThanOrEqual(3);
      // Pending deliveries show the probe's time as their next attempt (read between two reads of the same probe time:
      // a probe that fails between them moves both on).
      await holds(async () => {
        const probeAt = (await subscription(s.id)).circuit.nextProbeAt!;
        const waiting = (await deliveries(s.id)).filter((d) => d.status === "PENDING");
        expect((await subscription(s.id)).circuit.nextProbeAt).toBe(probeAt);
        expect(waiting.length).toBeGreaterThan(0);
        for (const d of waiting) expect(d.nextAttemptAt).toBeGreaterThanOrEqual(probeAt);
      });
      // The receiver recovers: the next probe succeeds, the circuit closes, and every delivery goes.
      r.respond = () => 200;
      await holds(async () => expect((await subscription(s.id)).circuit.state).toBe("CLOSED"), { timeoutMs: 10_000 });
      await holds(async () =>
        expect((await deliveries(s.id)).map((d) => d.status)).toEqual(Array(4).fill("DELIVERED")),
      );
      expect(await subscription(s.id)).toMatchObject({ consecutiveFailures: 0, failingSince: null });

      // Failing again, and (as if) for six days: the next failed attempt turns it off, told and audited.
      r.respond = () => 500;
      await ingest(dataset("circuit"), "fails for good");
      await w.fanOut();
      await holds(async () => expect((await subscription(s.id)).consecutiveFailures).toBeGreaterThan(0));
      await h.database.pool.query(
        `UPDATE webhook_subscription SET failing_since = now() - interval '6 days' WHERE id = $1::uuid`,
        [s.id],
      );
      await holds(async () => expect((await subscription(s.id)).active).toBe(false), { timeoutMs: 10_000 });
      expect((await subscription(s.id)).disabledReason).toMatch(/failed for 5 days \(WEBHOOK_DISABLE_AFTER_DAYS\)/);
      const audit = await h.prisma.auditEvent.findMany({ where: { action: "webhook.disabled" } });
      expect(audit).toEqual([expect.objectContaining({ targetUrn: `urn:li:webhookSubscription:${s.id}` })]);
      const events = await h.database.pool.query<{ category: string; subject_actor: string }>(
        `SELECT category, subject_actor FROM platform_event WHERE entity_urn = $1`,
        [`urn:li:webhookSubscription:${s.id}`],
      );
      expect(events.rows).toEqual([{ category: "SCHEDULE", subject_actor: ROOT }]);
      // What was still pending is never sent.
      await w.webhooks.chores.find((c) => c.name === "settle-webhook-deliveries")!.run();
      await holds(async () => expect((await deliveries(s.id)).filter((d) => d.status === "PENDING")).toEqual([]));
      // Its owner turns it on again once the receiver is fixed: a fresh circuit, its days of failing forgotten.
      await gql(`mutation($i: UpdateWebhookSubscriptionInput!) { updateWebhookSubscription(input: $i) { id } }`, {
        i: { id: s.id, active: true },
      });
      expect(await subscription(s.id)).toMatchObject({
        active: true,
        disabledReason: null,
        consecutiveFailures: 0,
        failingSince: null,
        circuit: { state: "CLOSED", openedAt: null, nextProbeAt: null },
      });
    } finally {
      await forget([s.id]);
      await w.close();
    }
  }, 60_000);

  it("signs as Standard Webhooks specifies (verified by the official library), with both secrets across a rotation", async () => {
    const w = await startWebhookWorker(h);
    const r = await receiver();
    const user = `urn:li:corpuser:isolation-rotator-${randomUUID()}`;
    await grant(h, user, ["GET_ENTITY"]);
    const { secret, subscription: s } = await subscribe(user, r.url, dataset("standard"));
    const verifies = (key: string, i: number) => {
      const got = r.received[i]!;
      const headers = {
        "webhook-id": got.headers[STANDARD_WEBHOOK_HEADERS.id] as string,
        "webhook-timestamp": got.headers[STANDARD_WEBHOOK_HEADERS.timestamp] as string,
        "webhook-signature": got.headers[STANDARD_WEBHOOK_HEADERS.signature] as string,
      };
      try {
        new Webhook(key).verify(got.body, headers);
      } catch {
        return false;
      }
      return verifyWebhookSignature(key, got.headers[WEBHOOK_HEADERS.signature] as string, got.body);
    };
    const ROTATE = `mutation($id: String!, $o: Int!) { rotateWebhookSecret(id: $id, overlapSeconds: $o) {
      secret subscription { previousSecretExpiresAt } } }`;
    try {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      await ingest(dataset("standard"), "first");
      await w.fanOut();
      await holds(() => expect(r.received).toHaveLength(1));
      const body = JSON.parse(r.received[0]!.body) as { id: string };
      expect(r.received[0]!.headers[STANDARD_WEBHOOK_HEADERS.id]).toBe(body.id);
      expect(r.received[0]!.headers[STANDARD_WEBHOOK_HEADERS.signature]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(verifies(secret, 0)).toBe(true);

      // Past 7 days of overlap: refused, naming the field and the limit.
      const refused = await h.graphql(ROTATE, { id: s.id, o: 604_801 }, systemClientHeaders(user));
      expect(refused.body.errors?.[0]).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: expect.stringMatching(/overlapSeconds.*604800/),
      });
      const rotated = (
        await gql<{ rotateWebhookSecret: { secret: string; subscription: { previousSecretExpiresAt: number } } }>(
          ROTATE,
          { id: s.id, o: 3600 },
          user,
        )
      ).rotateWebhookSecret;
      expect(rotated.secret).not.toBe(secret);
      expect(rotated.subscription.previousSecretExpiresAt).toBeGreaterThan(Date.now() + 3_500_000);
      await ingest(dataset("standard"), "during the overlap");
      await w.fanOut();
      await holds(() => expect(r.received).toHaveLength(2));
      // Two signatures, space-separated: a receiver with either secret verifies it.
      expect((r.received[1]!.headers[STANDARD_WEBHOOK_HEADERS.signature] as string).split(" ")).toHaveLength(2);
      expect(verifies(rotated.secret, 1)).toBe(true);
      expect(verifies(secret, 1)).toBe(true);

      // A rotation without overlap: only the newest signs.
      const newest = (await gql<{ rotateWebhookSecret: { secret: string } }>(ROTATE, { id: s.id, o: 0 }, user))
        .rotateWebhookSecret.secret;
      await ingest(dataset("standard"), "after");
      await w.fanOut();
      await holds(() => expect(r.received).toHaveLength(3));
      expect(verifies(newest, 2)).toBe(true);
      expect(verifies(rotated.secret, 2)).toBe(false);
      expect(verifies(secret, 2)).toBe(false);
      expect(await h.prisma.auditEvent.count({ where: { action: "webhook.rotateSecret", actorUrn: user } })).toBe(2);
    } finally {
      await forget([s.id]);
      await w.close();
    }
  });

  it("exports delivery metrics: outcomes, latency, pending by state, open circuits", async () => {
    const w = await startWebhookWorker(h);
    const r = await receiver();
    const { subscription: s } = await subscribe(ROOT, r.url, dataset("metrics"));
    try {
      registerWebhookGauges(w.db);
      await ingest(dataset("metrics"), "counted");
      await w.fanOut();
      await holds(() => expect(r.received).toHaveLength(1));
      await holds(async () => expect((await deliveries(s.id))[0]!.status).toBe("DELIVERED"));
      const text = await webhookRegistry.metrics();
      expect(text).toMatch(/^webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
      expect(text).toMatch(/^webhook_deliveries_total\{outcome="dropped"\} \d+/m);
      expect(text).toMatch(/^webhook_delivery_latency_seconds_count [1-9]/m);
      for (const state of ["due", "scheduled", "in_flight", "paused"]) {
        expect(text).toMatch(new RegExp(`^webhook_deliveries_pending\\{state="${state}"\\} \\d+`, "m"));
      }
      expect(text).toMatch(/^webhook_circuits_open \d+/m);
    } finally {
      await forget([s.id]);
      await w.close();
    }
  });
});
