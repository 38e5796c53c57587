/**
 * Webhooks (docs/webhooks.md) against the real gateway over GraphQL and HTTP, the evaluation worker's fan-out and
 * delivery worker in process (real PostgreSQL, Redis, BullMQ) and real HTTP receivers: a delivery is signed so that
 * a receiver verifies it; a failing receiver is retried until it recovers, every attempt carrying the same event id;
 * a 4xx stops early; a replay re-sends with the same event id; an event its subscriber may not read, or may no longer
 * read at the delivery, is skipped and never sent; private targets are refused in production; a hanging subscriber
 * does not delay another's deliveries; revokeActorAccess turns the user's subscriptions off; the per-user bound; each
 * caller's writes within its audit budget.
 */
import { randomUUID } from "node:crypto";
import { createLogger, type Config } from "@mdp/core";
import { verifyWebhookSignature, WEBHOOK_HEADERS } from "@mdp/webhooks";
import { eventually } from "@mdp/core/testing";
import { postWebhook, pruneWebhookDeliveriesFully, settleWebhookDeliveriesFully } from "webhook-worker";
import { WebhookService } from "../src/webhooks/webhook.service";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { startReceiver, type Receiver } from "./support/webhook-receiver";
import { startWebhookWorker, type WebhookWorker } from "./support/webhook-worker";

const READER = "urn:li:corpuser:hooks-reader"; // GET_ENTITY
const BLIND = "urn:li:corpuser:hooks-blind"; // nothing
const LOSER = "urn:li:corpuser:hooks-loser"; // GET_ENTITY, taken away before the delivery
const ADMIN = "urn:li:corpuser:hooks-admin"; // MANAGE_SYSTEM_OPERATIONS
const REPLAYER = "urn:li:corpuser:hooks-replayer"; // GET_ENTITY (READER has its four subscriptions by then)
const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.hooks_${name},PROD)`;

const CREATE = `mutation($i: CreateWebhookSubscriptionInput!) {
  createWebhookSubscription(input: $i) { secret subscription { id ownerUrn url eventTypes active } }
}`;
const DELIVERIES = `query($i: ListWebhookDeliveriesInput!) {
  listWebhookDeliveries(input: $i) { total deliveries { id eventId eventSeq status attempts responseStatus error generation durationMs } }
}`;

interface Delivery {
  id: string;
  eventId: string;
  eventSeq: string;
  status: string;
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  generation: number;
}

/** Waits until the expectations in `check` pass (eventually wants a value: true once they do). */
const holds = (check: () => unknown, options?: { timeoutMs?: number }) =>
  eventually(
    "the expectations",
    async () => {
      await check();
      return true;
    },
    options,
  );

describe("webhooks", () => {
  let h: Harness;
  let w: WebhookWorker;
  const receivers: Receiver[] = [];

  const gql = async <T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, actor = ROOT) => {
    const body = (await h.graphql(query, variables, systemClientHeaders(actor))).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data as T;
  };
  const gqlError = async (query: string, variables: Record<string, unknown>, actor = ROOT) => {
    const body = (await h.graphql(query, variables, systemClientHeaders(actor))).body;
    return body.errors?.[0];
  };
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const subscribe = async (actor: string, url: string, more: Record<string, unknown> = {}) =>
    (
      await gql<{ createWebhookSubscription: { secret: string; subscription: { id: string } } }>(
        CREATE,
        { i: { url, eventTypes: ["MetadataChangeLog_v1"], ...more } },
        actor,
      )
    ).createWebhookSubscription;
  const ingest = async (urn: string, description: string) => {
    const proposal = {
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
    };
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals: [proposal] });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const deliveries = async (subscriptionId: string, actor = ROOT) =>
    (await gql<{ listWebhookDeliveries: { deliveries: Delivery[] } }>(DELIVERIES, { i: { subscriptionId } }, actor))
      .listWebhookDeliveries.deliveries;

  beforeAll(async () => {
    h = await startGateway({
      WEBHOOK_RETRY_SCHEDULE: "0,100ms,200ms,400ms,800ms",
      WEBHOOK_TIMEOUT_MS: "30000",
      WEBHOOK_DELIVERY_CONCURRENCY: "4",
      WEBHOOK_SUBSCRIPTION_CONCURRENCY: "1",
      MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: "4",
    });
    await grant(h, READER, ["GET_ENTITY"]);
    await grant(h, LOSER, ["GET_ENTITY"]);
    await grant(h, ADMIN, ["MANAGE_SYSTEM_OPERATIONS"]);
    await grant(h, REPLAYER, ["GET_ENTITY"]);
    w = await startWebhookWorker(h);
  });
  afterAll(async () => {
    for (const r of receivers) r.release();
    await w?.close();
    await Promise.all(receivers.map((r) => r.close()));
    await h?.close();
  });

  it("signs each delivery so that the receiver verifies it, with the event's id, type and a timestamp", async () => {
    const r = await receiver();
    const { secret, subscription } = await subscribe(READER, r.url, { entityUrn: dataset("signed") });
    expect(secret).toMatch(/^whsec_/);
    await ingest(dataset("signed"), "first");
    await ingest(dataset("other"), "not this one");
    await w.fanOut();
    await holds(() => expect(r.received).toHaveLength(1));
    const [got] = r.received;
    const signature = got!.headers[WEBHOOK_HEADERS.signature] as string;
    expect(verifyWebhookSignature(secret, signature, got!.body)).toBe(true);
    expect(verifyWebhookSignature(secret, signature, got!.body.replace('"eventType"', '"eventtype"'))).toBe(false);
    expect(verifyWebhookSignature(`${secret}x`, signature, got!.body)).toBe(false);
    expect(signature).toBe(`t=${got!.headers[WEBHOOK_HEADERS.timestamp]},${signature.split(",")[1]}`);
    const body = JSON.parse(got!.body) as { id: string; eventType: string; event: { entityUrn: string } };
    expect(body.eventType).toBe("MetadataChangeLog_v1");
    expect(body.event.entityUrn).toBe(dataset("signed"));
    expect(got!.headers[WEBHOOK_HEADERS.eventId]).toBe(body.id);
    // The secret is stored sealed, never as given.
    const stored = await h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(stored.secretSealed).not.toContain(secret.slice(6));
    await holds(async () =>
      expect(await deliveries(subscription.id, READER)).toEqual([
        expect.objectContaining({ status: "DELIVERED", attempts: 1, responseStatus: 200, eventId: body.id }),
      ]),
    );
  });

  it("delivers a token's EntityChangeEvent_v1 to its actor and to MANAGE_ACCESS_TOKENS holders only, nothing to others", async () => {
    const holder = "urn:li:corpuser:hooks-token-holder";
    const tokenAdmin = "urn:li:corpuser:hooks-token-admin";
    await grant(h, tokenAdmin, ["MANAGE_ACCESS_TOKENS"]);
    // its own tokens' events need what the API asks to see its own tokens
    await grant(h, holder, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const tokenEvents = { eventTypes: ["EntityChangeEvent_v1"], categories: ["ACCESS_TOKEN"], actorUrn: holder };
    const [own, admin, other] = [await receiver(), await receiver(), await receiver()];
    await subscribe(holder, own.url, tokenEvents);
    await subscribe(tokenAdmin, admin.url, tokenEvents);
    const entityReader = "urn:li:corpuser:hooks-entity-reader";
    await grant(h, entityReader, ["GET_ENTITY"]);
    const blind = await subscribe(entityReader, other.url, tokenEvents); // GET_ENTITY reads no token's events
    const { id } = await createToken(h, holder);
    await w.fanOut();
    for (const r of [own, admin]) {
      await holds(() => expect(r.received).toHaveLength(1));
      const body = JSON.parse(r.received[0]!.body) as { eventType: string; event: Record<string, unknown> };
      expect(body).toMatchObject({
        eventType: "EntityChangeEvent_v1",
        event: {
          entityType: "dataHubAccessToken",
          entityUrn: `urn:li:dataHubAccessToken:${id}`,
          category: "ACCESS_TOKEN",
          operation: "CREATE",
        },
      });
      expect(r.received[0]!.body).not.toMatch(/eyJ/); // never the token itself
    }
    // The same pass fanned the event out to the others: for this subscriber it left nothing, not even a row.
    expect(await deliveries(blind.subscription.id, entityReader)).toEqual([]);
    expect(other.received).toHaveLength(0);
  });

  it("retries a failing receiver with backoff until it recovers, every attempt carrying the same event id", async () => {
    const r = await receiver();
    r.respond = (_req, i) => (i < 2 ? 503 : i === 2 ? 429 : 200);
    const { subscription } = await subscribe(READER, r.url, { entityUrn: dataset("flaky") });
    await ingest(dataset("flaky"), "retry me");
    await w.fanOut();
    await holds(() => expect(r.received).toHaveLength(4), { timeoutMs: 20_000 });
    const ids = new Set(r.received.map((q) => q.headers[WEBHOOK_HEADERS.eventId]));
    const deliveryIds = new Set(r.received.map((q) => q.headers[WEBHOOK_HEADERS.deliveryId]));
    expect(ids.size).toBe(1);
    expect(deliveryIds.size).toBe(1);
    // Exponential: 100, 200, 400 ms at least between the attempts.
    const gaps = r.received.slice(1).map((q, i) => q.at - r.received[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[2]).toBeGreaterThanOrEqual(gaps[0]!);
    await holds(async () =>
      expect(await deliveries(subscription.id)).toEqual([
        expect.objectContaining({ status: "DELIVERED", attempts: 4, responseStatus: 200, error: null }),
      ]),
    );
  });

  it("stops at a 4xx (the same body would be refused again), logged with the receiver's answer, bounded", async () => {
    const r = await receiver();
    r.respond = () => 400;
    const { subscription } = await subscribe(READER, r.url, { entityUrn: dataset("refusing") });
    await ingest(dataset("refusing"), "refused");
    await w.fanOut();
    await holds(async () =>
      expect(await deliveries(subscription.id)).toEqual([
        expect.objectContaining({ status: "FAILED", attempts: 1, responseStatus: 400, error: "HTTP 400: refused 0" }),
      ]),
    );
    expect(r.received).toHaveLength(1);
  });

  it("replays deliveries with the same event ids, as new deliveries signed afresh", async () => {
    const r = await receiver();
    const { secret, subscription } = await subscribe(READER, r.url, { entityUrn: dataset("replayed") });
    await ingest(dataset("replayed"), "one");
    await ingest(dataset("replayed"), "two");
    await w.fanOut();
    await holds(() => expect(r.received).toHaveLength(2));
    const first = await deliveries(subscription.id);
    const since = Date.now() - 60_000;
    const replayed = await gql<{ replayWebhookDeliveries: { replayed: number; deliveryIds: string[] } }>(
      `mutation($i: ReplayWebhookDeliveriesInput!) { replayWebhookDeliveries(input: $i) { replayed deliveryIds } }`,
      { i: { subscriptionId: subscription.id, since } },
      READER,
    );
    expect(replayed.replayWebhookDeliveries.replayed).toBe(2);
    await holds(() => expect(r.received).toHaveLength(4));
    const eventIds = (from: number) => r.received.slice(from).map((q) => q.headers[WEBHOOK_HEADERS.eventId]);
    expect(new Set(eventIds(2))).toEqual(new Set(eventIds(0)));
    expect(new Set(eventIds(2))).toEqual(new Set(first.map((d) => d.eventId)));
    for (const q of r.received.slice(2)) {
      expect(verifyWebhookSignature(secret, q.headers[WEBHOOK_HEADERS.signature] as string, q.body)).toBe(true);
      expect(replayed.replayWebhookDeliveries.deliveryIds).toContain(q.headers[WEBHOOK_HEADERS.deliveryId]);
    }
    const after = await deliveries(subscription.id);
    expect(after.filter((d) => d.generation === 1)).toHaveLength(2);
    // A replay by someone else's hand needs MANAGE_SYSTEM_OPERATIONS, and is audited.
    const refused = await gqlError(
      `mutation($i: ReplayWebhookDeliveriesInput!) { replayWebhookDeliveries(input: $i) { replayed } }`,
      { i: { subscriptionId: subscription.id, deliveryIds: [first[0]!.id] } },
      BLIND,
    );
    expect(refused?.extensions?.code).toBe("FORBIDDEN");
    const audit = await h.prisma.auditEvent.findMany({ where: { action: "webhook.replay" } });
    expect(audit).toEqual([expect.objectContaining({ actorUrn: READER })]);
  });

  it("refuses a replay while a thousand replayed deliveries of the subscription still wait: replays do not pile up", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(REPLAYER, r.url, { entityUrn: dataset("replay-flood") });
    await ingest(dataset("replay-flood"), "once");
    await w.fanOut();
    await holds(() => expect(r.received).toHaveLength(1));
    const REPLAY = `mutation($i: ReplayWebhookDeliveriesInput!) { replayWebhookDeliveries(input: $i) { replayed } }`;
    const since = Date.now() - 60_000;
    // As if replay had been called in a loop faster than the receiver takes them: 1,000 replays waiting (no jobs).
    await h.database.pool.query(
      `INSERT INTO webhook_delivery (id, subscription_id, event_seq, event_id, event_type, generation, status, body,
                                     entity_type, category, subject_actor)
       SELECT gen_random_uuid(), subscription_id, event_seq, event_id, event_type, 1000 + g, 'PENDING', body,
              entity_type, category, subject_actor
         FROM webhook_delivery, generate_series(1, 1000) g WHERE subscription_id = $1::uuid AND generation = 0`,
      [subscription.id],
    );
    const refused = await gqlError(REPLAY, { i: { subscriptionId: subscription.id, since } }, REPLAYER);
    expect(refused?.extensions?.code).toBe("CONFLICT");
    expect(refused?.message).toContain("1000 replayed deliveries waiting");
    const waiting = () =>
      h.database.pool.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE subscription_id = $1::uuid`, [
        subscription.id,
      ]);
    expect((await waiting()).rows[0].n).toBe(1001);
    // Once they are sent, replaying works again.
    await h.database.pool.query(
      `UPDATE webhook_delivery SET status = 'DELIVERED' WHERE subscription_id = $1::uuid AND generation > 0`,
      [subscription.id],
    );
    expect(
      (
        await gql<{ replayWebhookDeliveries: { replayed: number } }>(
          REPLAY,
          { i: { subscriptionId: subscription.id, since } },
          REPLAYER,
        )
      ).replayWebhookDeliveries.replayed,
    ).toBe(1);
    await holds(() => expect(r.received).toHaveLength(2));
  });

  it("skips an event its subscriber may not read (not even logged), and one whose privilege was lost before the delivery: never sent", async () => {
    const blindReceiver = await receiver();
    const loserReceiver = await receiver();
    const blind = await subscribe(BLIND, blindReceiver.url, { entityUrn: dataset("secret") });
    const loser = await subscribe(LOSER, loserReceiver.url, { entityUrn: dataset("secret") });
    await w.pause();
    await ingest(dataset("secret"), "not for everyone");
    await w.fanOut();
    // Fanned out while LOSER could read it: a delivery waits. Then its privilege goes before the job runs.
    expect((await deliveries(loser.subscription.id))[0]).toMatchObject({ status: "PENDING" });
    // Nothing in BLIND's log either: a SKIPPED row would tell it that (and when) the entity its filter names changed.
    expect(await deliveries(blind.subscription.id, BLIND)).toEqual([]);
    await h.prisma.policy.deleteMany({ where: { users: { has: LOSER } } });
    w.resume();
    await holds(async () =>
      expect((await deliveries(loser.subscription.id))[0]).toMatchObject({
        status: "SKIPPED",
        attempts: 0,
        error: expect.stringContaining("may not read"),
      }),
    );
    expect(blindReceiver.received).toHaveLength(0);
    expect(loserReceiver.received).toHaveLength(0);
  });

  it("lets only a subscription's owner change its url: an admin would receive what the owner may read", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(REPLAYER, r.url, { entityUrn: dataset("redirected") });
    const UPDATE = `mutation($i: UpdateWebhookSubscriptionInput!) { updateWebhookSubscription(input: $i) { url active } }`;
    const refused = await gqlError(UPDATE, { i: { id: subscription.id, url: "https://admin.example/mine" } }, ADMIN);
    expect(refused).toMatchObject({ extensions: { code: "FORBIDDEN" }, message: expect.stringContaining("url") });
    const row = await h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(row.url).toBe(r.url);
    // The admin still turns it off (and on), and its owner still moves it.
    expect(await gql(UPDATE, { i: { id: subscription.id, active: false } }, ADMIN)).toEqual({
      updateWebhookSubscription: { url: r.url, active: false },
    });
    expect(await gql(UPDATE, { i: { id: subscription.id, url: `${r.url}/moved`, active: true } }, REPLAYER)).toEqual({
      updateWebhookSubscription: { url: `${r.url}/moved`, active: true },
    });
  });

  it("lets go of a delivery whose worker died holding it (its lease ended), and another worker sends it", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(ROOT, r.url, { entityUrn: dataset("lost") });
    await w.pause();
    await ingest(dataset("lost"), "its worker dies");
    await w.fanOut();
    const [pending] = await deliveries(subscription.id);
    expect(pending).toMatchObject({ status: "PENDING" });
    // As if a worker had claimed it and died mid-POST: held, its lease over.
    await h.database.pool.query(
      `UPDATE webhook_delivery SET lease_until = now() - interval '1 second' WHERE id = $1::uuid`,
      [pending!.id],
    );
    w.resume();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(r.received).toHaveLength(0); // held: nobody claims it
    expect(await settleWebhookDeliveriesFully(h.database.pool)).toMatchObject({ released: 1 });
    await holds(() => expect(r.received).toHaveLength(1));
    expect(r.received[0]!.headers[WEBHOOK_HEADERS.deliveryId]).toBe(pending!.id);
    await holds(async () => expect((await deliveries(subscription.id))[0]).toMatchObject({ status: "DELIVERED" }));
  });

  it("a subscriber that hangs does not delay another's deliveries", async () => {
    const hanging = await receiver();
    hanging.respond = () => "hang";
    const quick = await receiver();
    await subscribe(ROOT, hanging.url, { entityUrn: dataset("busy"), description: "hangs" });
    await subscribe(ROOT, quick.url, { entityUrn: dataset("busy"), description: "answers" });
    for (let i = 0; i < 8; i++) await ingest(dataset("busy"), `change ${i}`);
    const started = Date.now();
    await w.fanOut();
    // 8 deliveries each, 4 slots in the worker; the hanging endpoint holds one (WEBHOOK_SUBSCRIPTION_CONCURRENCY),
    // the other's arrive meanwhile, well within one of the hanging requests' 30 s timeout.
    await holds(() => expect(quick.received).toHaveLength(8), { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hanging.received).toHaveLength(1);
    hanging.respond = () => 200;
    hanging.release();
    await holds(() => expect(hanging.received).toHaveLength(8), { timeoutMs: 15_000 });
  });

  it("one user's hanging subscriptions never hold every delivery slot: another user's deliveries go on", async () => {
    const hog = `urn:li:corpuser:hooks-hog-${randomUUID()}`;
    const other = `urn:li:corpuser:hooks-other-${randomUUID()}`;
    await grant(h, hog, ["GET_ENTITY"]);
    await grant(h, other, ["GET_ENTITY"]);
    const hanging = await receiver();
    hanging.respond = () => "hang";
    const quick = await receiver();
    // As many subscriptions as the worker has slots (4), one POST each in flight (WEBHOOK_SUBSCRIPTION_CONCURRENCY).
    for (let i = 0; i < 4; i++) {
      await subscribe(hog, hanging.url, { entityUrn: dataset("hogged"), description: `hangs ${i}` });
    }
    await subscribe(other, quick.url, { entityUrn: dataset("not-hogged") });
    await ingest(dataset("hogged"), "four deliveries that hang");
    await ingest(dataset("not-hogged"), "one that is answered");
    await w.fanOut();
    // The hanging ones time out after 30 s; the other user's arrives well before.
    await holds(() => expect(quick.received).toHaveLength(1), { timeoutMs: 10_000 });
    expect(hanging.received.length).toBeLessThanOrEqual(2); // half the worker's slots at most
    hanging.respond = () => 200;
    hanging.release();
    await holds(() => expect(hanging.received.length).toBeGreaterThanOrEqual(4), { timeoutMs: 15_000 });
  });

  it("refuses private targets in production at subscription time (naming the field) and again at delivery", async () => {
    const production: Pick<Config, "NODE_ENV" | "WEBHOOK_ALLOW_PRIVATE_TARGETS"> = {
      NODE_ENV: "production",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: false,
    };
    const lookup = (async (host: string) =>
      host === "rebind.example"
        ? [{ address: "10.1.2.3", family: 4 }]
        : [{ address: "93.184.216.34", family: 4 }]) as never;
    const logger = createLogger("webhooks-test", "silent");
    const service = new WebhookService({
      db: h.database,
      engine: h.services.engine,
      config: { ...h.config, ...production },
      logger,
      lookup,
    });
    const actor = { urn: `urn:li:corpuser:hooks-production-${randomUUID()}`, via: "system" as const };
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://[::1]/hook",
      "http://169.254.169.254/latest/meta-data",
      "http://10.0.0.5/hook",
      "http://100.64.1.1/hook",
      "http://[fd00::1]/hook",
      "http://rebind.example/hook",
    ]) {
      await expect(
        service.create(actor, { input: { url, eventTypes: ["MetadataChangeLog_v1"] } }),
      ).rejects.toMatchObject({
        code: "BAD_USER_INPUT",
        message: expect.stringMatching(/^input\.url: .*WEBHOOK_ALLOW_PRIVATE_TARGETS/),
      });
    }
    // A name's private address is not told to whoever asks: the answer would map the network behind the service.
    await expect(
      service.create(actor, { input: { url: "http://rebind.example/hook", eventTypes: ["MetadataChangeLog_v1"] } }),
    ).rejects.toMatchObject({
      message: expect.not.stringContaining("10.1.2.3"),
    });
    await expect(
      service.create(actor, { input: { url: "https://hooks.example/ok", eventTypes: ["MetadataChangeLog_v1"] } }),
    ).resolves.toMatchObject({ secret: expect.any(String) });
    const allowed = new WebhookService({
      db: h.database,
      engine: h.services.engine,
      config: { ...h.config, ...production, WEBHOOK_ALLOW_PRIVATE_TARGETS: true },
      logger,
      lookup,
    });
    await expect(
      allowed.create(actor, { input: { url: "http://127.0.0.1:9/hook", eventTypes: ["MetadataChangeLog_v1"] } }),
    ).resolves.toMatchObject({ secret: expect.any(String) });
    // At delivery: nothing is sent to a private address, however it was subscribed.
    const r = await receiver();
    const outcome = await postWebhook(r.url, {}, "{}", { timeoutMs: 1000, policy: { allowPrivate: false } });
    expect(outcome).toMatchObject({ status: null, refused: true, error: expect.stringContaining("loopback") });
    expect(r.received).toHaveLength(0);
    const sent = await postWebhook(r.url, {}, "{}", { timeoutMs: 1000, policy: { allowPrivate: true } });
    expect(sent).toMatchObject({ status: 200, error: null });
  });

  it("bounds a url whose host's DNS never answers by WEBHOOK_TIMEOUT_MS, at subscription time and at delivery", async () => {
    const never = (() => new Promise(() => undefined)) as never;
    const started = Date.now();
    const outcome = await postWebhook("http://never-answers.example/hook", {}, "{}", {
      timeoutMs: 300,
      policy: { allowPrivate: true },
      lookup: never,
    });
    // Not refused: a DNS that did not answer this time may answer the next, so the attempt is retried.
    expect(outcome).toMatchObject({ status: null, refused: false, error: expect.stringContaining("300 ms") });
    {
      const service = new WebhookService({
        db: h.database,
        engine: h.services.engine,
        config: { ...h.config, NODE_ENV: "production", WEBHOOK_ALLOW_PRIVATE_TARGETS: false, WEBHOOK_TIMEOUT_MS: 300 },
        logger: createLogger("webhooks-test", "silent"),
        lookup: never,
      });
      const actor = { urn: `urn:li:corpuser:hooks-dns-${randomUUID()}`, via: "system" as const };
      await expect(
        service.create(actor, {
          input: { url: "https://never-answers.example/", eventTypes: ["MetadataChangeLog_v1"] },
        }),
      ).rejects.toMatchObject({ code: "BAD_USER_INPUT", message: expect.stringMatching(/^input\.url: .*300 ms/) });
    }
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 15_000);

  it("answers 4xx naming the field for a bad url or event type, and bounds the subscriptions per user", async () => {
    const bad = async (i: Record<string, unknown>) => gqlError(CREATE, { i }, BLIND);
    expect(await bad({ url: "ftp://x.example/", eventTypes: ["MetadataChangeLog_v1"] })).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: expect.stringContaining("input.url"),
    });
    expect(await bad({ url: "https://u:p@x.example/", eventTypes: ["MetadataChangeLog_v1"] })).toMatchObject({
      message: expect.stringContaining("credentials"),
    });
    expect(
      await bad({ url: `https://x.example/${"a".repeat(2100)}`, eventTypes: ["MetadataChangeLog_v1"] }),
    ).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: expect.stringContaining("input.url"),
    });
    expect(await bad({ url: "https://x.example/", eventTypes: ["Nope"] })).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: expect.stringContaining("input.eventTypes"),
    });
    expect(await bad({ url: "https://x.example/", eventTypes: [] })).toMatchObject({
      message: expect.stringContaining("input.eventTypes"),
    });
    const user = `urn:li:corpuser:hooks-many-${randomUUID()}`;
    for (let i = 0; i < 4; i++) await subscribe(user, `https://x.example/${i}`);
    expect(
      await gqlError(CREATE, { i: { url: "https://x.example/4", eventTypes: ["MetadataChangeLog_v1"] } }, user),
    ).toMatchObject({
      extensions: { code: "CONFLICT" },
      message: expect.stringContaining("MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER"),
    });
    // Another's subscriptions: listed, changed and deleted by an admin only.
    const LIST = `query($i: ListWebhookSubscriptionsInput) { listWebhookSubscriptions(input: $i) { total subscriptions { id ownerUrn } } }`;
    expect((await gqlError(LIST, { i: { ownerUrn: user } }, BLIND))?.extensions?.code).toBe("FORBIDDEN");
    const listed = await gql<{ listWebhookSubscriptions: { total: number; subscriptions: Array<{ id: string }> } }>(
      LIST,
      { i: { ownerUrn: user } },
      ADMIN,
    );
    expect(listed.listWebhookSubscriptions.total).toBe(4);
    const own = await gql<{ listWebhookSubscriptions: { total: number } }>(LIST, {}, user);
    expect(own.listWebhookSubscriptions.total).toBe(4);
    const victim = listed.listWebhookSubscriptions.subscriptions[0]!.id;
    const DELETE = `mutation($id: String!) { deleteWebhookSubscription(id: $id) }`;
    expect((await gqlError(DELETE, { id: victim }, BLIND))?.extensions?.code).toBe("FORBIDDEN");
    expect(await gql(DELETE, { id: victim }, ADMIN)).toEqual({ deleteWebhookSubscription: true });
    expect(await h.prisma.auditEvent.count({ where: { action: "webhook.delete", actorUrn: ADMIN } })).toBe(1);
  });

  it("budgets each caller's webhook writes: past 30 at once, a write is refused with 429 before anything is written", async () => {
    const user = `urn:li:corpuser:hooks-flood-${randomUUID()}`; // holds no privilege at all
    const as = systemClientHeaders(user);
    const kept = (await subscribe(user, "https://x.example/flood")).subscription;
    const doomed = (await subscribe(user, "https://x.example/flood-doomed")).subscription;
    const UPDATE = `mutation($i: UpdateWebhookSubscriptionInput!) { updateWebhookSubscription(input: $i) { id } }`;
    const REPLAY = `mutation($i: ReplayWebhookDeliveriesInput!) { replayWebhookDeliveries(input: $i) { replayed } }`;
    const DELETE = `mutation($id: String!) { deleteWebhookSubscription(id: $id) }`;
    const writes = {
      create: (i: number) =>
        h.graphql(CREATE, { i: { url: `https://x.example/more-${i}`, eventTypes: ["MetadataChangeLog_v1"] } }, as),
      update: (i: number) => h.graphql(UPDATE, { i: { id: kept.id, description: `write ${i}` } }, as),
      replay: () => h.graphql(REPLAY, { i: { subscriptionId: kept.id, since: 0 } }, as),
      delete: () => h.graphql(DELETE, { id: doomed.id }, as),
    };
    const tooMany = {
      extensions: { code: "TOO_MANY_REQUESTS" },
      message: expect.stringMatching(
        /^Rate limit exceeded: at most 30 webhook subscription writes \(create, update, delete, replay\) at once, then 30 per minute per actor \(the audit budget\); retry in \d+ s\.$/,
      ),
    };
    // Writes one after another until the budget (30 at once, refilled at one every 2 s) refuses one.
    let admitted = 2;
    let refused: Awaited<ReturnType<typeof writes.update>> | undefined;
    let refusedAt = 0;
    for (let i = 0; i < 100 && !refused; i++) {
      const answer = await writes.update(i);
      if (answer.status === 429) {
        refused = answer;
        refusedAt = Date.now();
      } else {
        expect(answer.body.errors).toBeUndefined();
        admitted++;
      }
    }
    expect(refused?.body.errors?.[0]).toMatchObject(tooMany);
    expect(admitted).toBeGreaterThanOrEqual(30);
    // Then a burst of each kind of write at once: every kind is refused (all but what a refill lets through).
    const kinds = ["create", "update", "replay", "delete"] as const;
    const answers = await Promise.all(
      kinds.flatMap((kind) =>
        Array.from({ length: 8 }, async (_, i) => ({ kind, answer: await writes[kind](100 + i) })),
      ),
    );
    for (const kind of kinds) {
      const refusals = answers.filter((a) => a.kind === kind && a.answer.status === 429);
      expect(refusals.length).toBeGreaterThan(0);
      for (const r of refusals) expect(r.answer.body.errors?.[0]).toMatchObject(tooMany);
    }
    const through = answers.filter((a) => a.answer.status === 200 && !a.answer.body.errors);
    // What refilled since the refusal (one every 2 s), however slowly the burst was answered.
    expect(through.length).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - refusedAt) / 2000));
    // Refused before anything was written: one audit row per write let through, and nothing else changed.
    expect(await h.prisma.auditEvent.count({ where: { actorUrn: user } })).toBe(admitted + through.length);
    const created = through.filter((a) => a.kind === "create").length;
    const deleted = through.some((a) => a.kind === "delete") ? 1 : 0;
    expect(await h.prisma.webhookSubscription.count({ where: { ownerUrn: user } })).toBe(2 + created - deleted);
  });

  it("revokeActorAccess turns the user's subscriptions off: nothing more is delivered", async () => {
    const r = await receiver();
    const user = `urn:li:corpuser:hooks-revoked-${randomUUID()}`;
    await grant(h, user, ["GET_ENTITY"]);
    const { subscription } = await subscribe(user, r.url, { entityUrn: dataset("revoked") });
    await gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, { u: user });
    const row = await h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(row).toMatchObject({ active: false, disabledReason: expect.stringContaining("revokeActorAccess") });
    await ingest(dataset("revoked"), "after the revocation");
    await w.fanOut();
    expect(await deliveries(subscription.id)).toEqual([]);
    expect(r.received).toHaveLength(0);
  });

  it("revokeActorAccess of a minter turns off what a service-account token it minted subscribed", async () => {
    const r = await receiver();
    const minter = `urn:li:corpuser:hooks-minter-${randomUUID()}`;
    await grant(h, minter, ["MANAGE_SERVICE_ACCOUNTS", "GET_ENTITY"]);
    const account = (
      await gql<{ createServiceAccount: { urn: string } }>(
        `mutation { createServiceAccount(input: {displayName: "hooks robot"}) { urn } }`,
        {},
        minter,
      )
    ).createServiceAccount.urn;
    await grant(h, account, ["GET_ENTITY"]);
    const token = (
      await gql<{ createAccessToken: { accessToken: string } }>(
        `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
        { i: { type: "SERVICE_ACCOUNT", actorUrn: account, duration: "ONE_DAY", name: "hooks robot" } },
        minter,
      )
    ).createAccessToken.accessToken;
    // Whoever holds the minted token subscribes the account, to a url of its choosing.
    const created = await h.graphql(
      CREATE,
      { i: { url: r.url, eventTypes: ["MetadataChangeLog_v1"], entityUrn: dataset("minted") } },
      bearer(token),
    );
    const { subscription } = (
      created.body.data as { createWebhookSubscription: { subscription: { id: string; ownerUrn: string } } }
    ).createWebhookSubscription;
    expect(subscription.ownerUrn).toBe(account);
    await gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, { u: minter });
    const row = await h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(row).toMatchObject({ active: false, disabledReason: expect.stringContaining("revokeActorAccess") });
    await ingest(dataset("minted"), "after the minter's revocation");
    await w.fanOut();
    expect(await deliveries(subscription.id)).toEqual([]);
    expect(r.received).toHaveLength(0);
  });

  it("delivers nothing for a deleted service account, even if an admin turns its subscription on again", async () => {
    const r = await receiver();
    const account = (
      await gql<{ createServiceAccount: { urn: string } }>(
        `mutation { createServiceAccount(input: {displayName: "hooks deleted robot"}) { urn } }`,
        {},
      )
    ).createServiceAccount.urn;
    await grant(h, account, ["GET_ENTITY"]);
    const token = (
      await gql<{ createAccessToken: { accessToken: string } }>(
        `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
        { i: { type: "SERVICE_ACCOUNT", actorUrn: account, duration: "ONE_DAY", name: "hooks deleted robot" } },
      )
    ).createAccessToken.accessToken;
    const created = await h.graphql(
      CREATE,
      { i: { url: r.url, eventTypes: ["MetadataChangeLog_v1"], entityUrn: dataset("deleted-account") } },
      bearer(token),
    );
    const { subscription } = (created.body.data as { createWebhookSubscription: { subscription: { id: string } } })
      .createWebhookSubscription;
    await gql(`mutation($u: String!) { deleteServiceAccount(urn: $u) }`, { u: account });
    // Its policy still names it; an admin turns the subscription on again.
    await gql(
      `mutation($i: UpdateWebhookSubscriptionInput!) { updateWebhookSubscription(input: $i) { active } }`,
      { i: { id: subscription.id, active: true } },
      ADMIN,
    );
    await ingest(dataset("deleted-account"), "after the account was deleted");
    await w.fanOut();
    expect(await deliveries(subscription.id)).toEqual([]);
    expect(r.received).toHaveLength(0);
  });

  it("prunes delivery log rows past WEBHOOK_DELIVERY_RETENTION_DAYS once they are no longer pending", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(ROOT, r.url, { entityUrn: dataset("pruned") });
    await ingest(dataset("pruned"), "old news");
    await ingest(dataset("pruned"), "older news");
    await w.fanOut();
    await holds(async () =>
      expect((await deliveries(subscription.id)).map((d) => d.status)).toEqual(["DELIVERED", "DELIVERED"]),
    );
    const [kept, aged] = await deliveries(subscription.id);
    await h.database.pool.query(
      "UPDATE webhook_delivery SET created_at = now() - interval '8 days' WHERE id = $1::uuid",
      [aged!.id],
    );
    expect(await pruneWebhookDeliveriesFully(h.database.pool, 7)).toBe(1);
    expect((await deliveries(subscription.id)).map((d) => d.id)).toEqual([kept!.id]);
  });
});
