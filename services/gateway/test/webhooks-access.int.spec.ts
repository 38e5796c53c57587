/**
 * Who receives webhook deliveries (docs/webhooks.md), against the real gateway, workers in process and real HTTP
 * receivers: an event its subscriber may not read, or may no longer read at the delivery, is skipped and never sent;
 * only the owner changes a subscription's url; revokeActorAccess turns the user's subscriptions off (and those of the
 * service-account tokens it minted); a deleted service account gets nothing.
 */
import { randomUUID } from "node:crypto";
import { bearer, grant } from "./support/gateway-harness";
import { BLIND, LOSER, ADMIN, REPLAYER, dataset, CREATE, holds } from "./support/webhooks";
import { startWebhooksHarness } from "./support/webhooks-harness";

describe("webhooks", () => {
  const hooks = startWebhooksHarness();
  const { gql, gqlError, receiver, subscribe, ingest, deliveries } = hooks;

  it("skips an event its subscriber may not read (not even logged), and one whose privilege was lost before the delivery: never sent", async () => {
    const blindReceiver = await receiver();
    const loserReceiver = await receiver();
    const blind = await subscribe(BLIND, blindReceiver.url, { entityUrn: dataset("secret") });
    const loser = await subscribe(LOSER, loserReceiver.url, { entityUrn: dataset("secret") });
    await hooks.worker.pause();
    await ingest(dataset("secret"), "not for everyone");
    await hooks.worker.fanOut();
    // Fanned out while LOSER could read it: a delivery waits. Then its privilege goes before the job runs.
    expect((await deliveries(loser.subscription.id))[0]).toMatchObject({ status: "PENDING" });
    // Nothing in BLIND's log either: a SKIPPED row would tell it that (and when) the entity its filter names changed.
    expect(await deliveries(blind.subscription.id, BLIND)).toEqual([]);
    await hooks.gateway.prisma.policy.deleteMany({ where: { users: { has: LOSER } } });
    hooks.worker.resume();
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
    const row = await hooks.gateway.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
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
    await grant(hooks.gateway, user, ["GET_ENTITY"]);
    const { subscription } = await subscribe(user, r.url, { entityUrn: dataset("revoked") });
    await gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, { u: user });
    const row = await hooks.gateway.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(row).toMatchObject({ active: false, disabledReason: expect.stringContaining("revokeActorAccess") });
    await ingest(dataset("revoked"), "after the revocation");
    await hooks.worker.fanOut();
    expect(await deliveries(subscription.id)).toEqual([]);
    expect(r.received).toHaveLength(0);
  });

  it("revokeActorAccess of a minter turns off what a service-account token it minted subscribed", async () => {
    const r = await receiver();
    const minter = `urn:li:corpuser:hooks-minter-${randomUUID()}`;
    await grant(hooks.gateway, minter, ["MANAGE_SERVICE_ACCOUNTS", "GET_ENTITY"]);
    const account = (
      await gql<{ createServiceAccount: { urn: string } }>(
        `mutation { createServiceAccount(input: {displayName: "hooks robot"}) { urn } }`,
        {},
        minter,
      )
    ).createServiceAccount.urn;
    await grant(hooks.gateway, account, ["GET_ENTITY"]);
    const token = (
      await gql<{ createAccessToken: { accessToken: string } }>(
        `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
        { i: { type: "SERVICE_ACCOUNT", actorUrn: account, duration: "ONE_DAY", name: "hooks robot" } },
        minter,
      )
    ).createAccessToken.accessToken;
    // Whoever holds the minted token subscribes the account, to a url of its choosing.
    const created = await hooks.gateway.graphql(
      CREATE,
      { i: { url: r.url, eventTypes: ["MetadataChangeLog_v1"], entityUrn: dataset("minted") } },
      bearer(token),
    );
    const { subscription } = (
      created.body.data as { createWebhookSubscription: { subscription: { id: string; ownerUrn: string } } }
    ).createWebhookSubscription;
    expect(subscription.ownerUrn).toBe(account);
    await gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, { u: minter });
    const row = await hooks.gateway.prisma.webhookSubscription.findUniqueOrThrow({ where: { id: subscription.id } });
    expect(row).toMatchObject({ active: false, disabledReason: expect.stringContaining("revokeActorAccess") });
    await ingest(dataset("minted"), "after the minter's revocation");
    await hooks.worker.fanOut();
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
    await grant(hooks.gateway, account, ["GET_ENTITY"]);
    const token = (
      await gql<{ createAccessToken: { accessToken: string } }>(
        `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
        { i: { type: "SERVICE_ACCOUNT", actorUrn: account, duration: "ONE_DAY", name: "hooks deleted robot" } },
      )
    ).createAccessToken.accessToken;
    const created = await hooks.gateway.graphql(
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
    await hooks.worker.fanOut();
    expect(await deliveries(subscription.id)).toEqual([]);
    expect(r.received).toHaveLength(0);
  });
});
