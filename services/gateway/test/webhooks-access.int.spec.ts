/**
 * Who receives webhook deliveries (docs/webhooks.md), against the real gateway, workers in process and real HTTP
 * receivers: an event its subscriber may not read, or may no longer read at the delivery, is skipped and never sent;
 * only the owner changes a subscription's url; revokeActorAccess turns the user's subscriptions off (and those of the
 * service-account tokens it minted); a deleted service account gets nothing.
 */
import { randomUUID } from "node:crypto";
import { ROOT, bearer, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { startReceiver, type Receiver } from "./support/webhook-receiver";
import { startWebhookWorker, type WebhookWorker } from "./support/webhook-worker";
import {
  READER,
  BLIND,
  LOSER,
  ADMIN,
  REPLAYER,
  dataset,
  CREATE,
  DELIVERIES,
  Delivery,
  holds,
} from "./support/webhooks";

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
});
