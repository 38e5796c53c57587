/**
 * Webhook deliveries (docs/webhooks.md) against the real gateway, the evaluation worker's fan-out and the delivery
 * worker in process (real PostgreSQL, Redis, BullMQ) and real HTTP receivers: a delivery is signed so that a receiver
 * verifies it; a failing receiver is retried until it recovers, every attempt carrying the same event id; a 4xx stops
 * early; a replay re-sends with the same event id; a hanging subscriber does not delay another's deliveries; a dead
 * worker's delivery is taken over; the delivery log is pruned.
 */
import { randomUUID } from "node:crypto";
import { verifyWebhookSignature, WEBHOOK_HEADERS } from "@mdp/webhooks";
import { pruneWebhookDeliveriesFully, settleWebhookDeliveriesFully } from "webhook-worker";
import { ROOT, createToken, grant } from "./support/gateway-harness";
import { READER, BLIND, REPLAYER, dataset, holds } from "./support/webhooks";
import { startWebhooksHarness } from "./support/webhooks-harness";

describe("webhooks", () => {
  const hooks = startWebhooksHarness();
  const { gql, gqlError, receiver, subscribe, ingest, deliveries } = hooks;

  it("signs each delivery so that the receiver verifies it, with the event's id, type and a timestamp", async () => {
    const r = await receiver();
    const { secret, subscription } = await subscribe(READER, r.url, { entityUrn: dataset("signed") });
    expect(secret).toMatch(/^whsec_/);
    await ingest(dataset("signed"), "first");
    await ingest(dataset("other"), "not this one");
    await hooks.worker.fanOut();
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
    const stored = await hooks.gateway.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
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
    await grant(hooks.gateway, tokenAdmin, ["MANAGE_ACCESS_TOKENS"]);
    // its own tokens' events need what the API asks to see its own tokens
    await grant(hooks.gateway, holder, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const tokenEvents = { eventTypes: ["EntityChangeEvent_v1"], categories: ["ACCESS_TOKEN"], actorUrn: holder };
    const [own, admin, other] = [await receiver(), await receiver(), await receiver()];
    await subscribe(holder, own.url, tokenEvents);
    await subscribe(tokenAdmin, admin.url, tokenEvents);
    const entityReader = "urn:li:corpuser:hooks-entity-reader";
    await grant(hooks.gateway, entityReader, ["GET_ENTITY"]);
    const blind = await subscribe(entityReader, other.url, tokenEvents); // GET_ENTITY reads no token's events
    const { id } = await createToken(hooks.gateway, holder);
    await hooks.worker.fanOut();
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
    await hooks.worker.fanOut();
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
    await hooks.worker.fanOut();
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
    await hooks.worker.fanOut();
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
    const audit = await hooks.gateway.prisma.auditEvent.findMany({ where: { action: "webhook.replay" } });
    expect(audit).toEqual([expect.objectContaining({ actorUrn: READER })]);
  });

  it("refuses a replay while a thousand replayed deliveries of the subscription still wait: replays do not pile up", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(REPLAYER, r.url, { entityUrn: dataset("replay-flood") });
    await ingest(dataset("replay-flood"), "once");
    await hooks.worker.fanOut();
    await holds(() => expect(r.received).toHaveLength(1));
    const REPLAY = `mutation($i: ReplayWebhookDeliveriesInput!) { replayWebhookDeliveries(input: $i) { replayed } }`;
    const since = Date.now() - 60_000;
    // As if replay had been called in a loop faster than the receiver takes them: 1,000 replays waiting (no jobs).
    await hooks.gateway.database.pool.query(
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
      hooks.gateway.database.pool.query(
        `SELECT count(*)::int AS n FROM webhook_delivery WHERE subscription_id = $1::uuid`,
        [subscription.id],
      );
    expect((await waiting()).rows[0].n).toBe(1001);
    // Once they are sent, replaying works again.
    await hooks.gateway.database.pool.query(
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

  it("lets go of a delivery whose worker died holding it (its lease ended), and another worker sends it", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(ROOT, r.url, { entityUrn: dataset("lost") });
    await hooks.worker.pause();
    await ingest(dataset("lost"), "its worker dies");
    await hooks.worker.fanOut();
    const [pending] = await deliveries(subscription.id);
    expect(pending).toMatchObject({ status: "PENDING" });
    // As if a worker had claimed it and died mid-POST: held, its lease over.
    await hooks.gateway.database.pool.query(
      `UPDATE webhook_delivery SET lease_until = now() - interval '1 second' WHERE id = $1::uuid`,
      [pending!.id],
    );
    hooks.worker.resume();
    // Held: two whole claim rounds of the dispatcher (the first has ended once the second starts) pass it over.
    const rounds = hooks.worker.webhooks.dispatcher.claims;
    await holds(() => expect(hooks.worker.webhooks.dispatcher.claims).toBeGreaterThanOrEqual(rounds + 2));
    expect([hooks.worker.webhooks.dispatcher.inFlight, r.received.length]).toEqual([0, 0]); // no POST sent or under way
    expect(await settleWebhookDeliveriesFully(hooks.gateway.database.pool)).toMatchObject({ released: 1 });
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
    await hooks.worker.fanOut();
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
    await grant(hooks.gateway, hog, ["GET_ENTITY"]);
    await grant(hooks.gateway, other, ["GET_ENTITY"]);
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
    await hooks.worker.fanOut();
    // The hanging ones time out after 30 s; the other user's arrives well before.
    await holds(() => expect(quick.received).toHaveLength(1), { timeoutMs: 10_000 });
    expect(hanging.received.length).toBeLessThanOrEqual(2); // half the worker's slots at most
    hanging.respond = () => 200;
    hanging.release();
    await holds(() => expect(hanging.received.length).toBeGreaterThanOrEqual(4), { timeoutMs: 15_000 });
  });

  it("prunes delivery log rows past WEBHOOK_DELIVERY_RETENTION_DAYS once they are no longer pending", async () => {
    const r = await receiver();
    const { subscription } = await subscribe(ROOT, r.url, { entityUrn: dataset("pruned") });
    await ingest(dataset("pruned"), "old news");
    await ingest(dataset("pruned"), "older news");
    await hooks.worker.fanOut();
    await holds(async () =>
      expect((await deliveries(subscription.id)).map((d) => d.status)).toEqual(["DELIVERED", "DELIVERED"]),
    );
    const [kept, aged] = await deliveries(subscription.id);
    await hooks.gateway.database.pool.query(
      "UPDATE webhook_delivery SET created_at = now() - interval '8 days' WHERE id = $1::uuid",
      [aged!.id],
    );
    expect(await pruneWebhookDeliveriesFully(hooks.gateway.database.pool, 7)).toBe(1);
    expect((await deliveries(subscription.id)).map((d) => d.id)).toEqual([kept!.id]);
  });
});
