/**
 * Webhook subscriptions' bounds (docs/webhooks.md), against the real gateway and workers in process: private
 * targets are refused in production, at subscription time and at delivery; a url whose DNS never answers is bounded;
 * bad input is refused naming the field; the per-user bound; each caller's writes within its audit budget.
 */
import { randomUUID } from "node:crypto";
import { createLogger, type Config } from "@mdp/core";
import { postWebhook } from "webhook-worker";
import { createArgs } from "../src/webhooks/webhook-contracts";
import { WebhookService } from "../src/webhooks/webhook.service";
import { systemClientHeaders } from "./support/gateway-harness";
import { BLIND, ADMIN, CREATE } from "./support/webhooks";
import { startWebhooksHarness } from "./support/webhooks-harness";

/** createWebhookSubscription's arguments for `url`, as its resolver hands them to the service. */
const createInput = (url: string) => createArgs.parse({ input: { url, eventTypes: ["MetadataChangeLog_v1"] } });

describe("webhooks", () => {
  const hooks = startWebhooksHarness();
  const { gql, gqlError, receiver, subscribe } = hooks;

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
      db: hooks.gateway.database,
      engine: hooks.gateway.services.engine,
      config: { ...hooks.gateway.config, ...production },
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
      await expect(service.create(actor, createInput(url))).rejects.toMatchObject({
        code: "BAD_USER_INPUT",
        message: expect.stringMatching(/^input\.url: .*WEBHOOK_ALLOW_PRIVATE_TARGETS/),
      });
    }
    // A name's private address is not told to whoever asks: the answer would map the network behind the service.
    await expect(service.create(actor, createInput("http://rebind.example/hook"))).rejects.toMatchObject({
      message: expect.not.stringContaining("10.1.2.3"),
    });
    await expect(service.create(actor, createInput("https://hooks.example/ok"))).resolves.toMatchObject({
      secret: expect.any(String),
    });
    const allowed = new WebhookService({
      db: hooks.gateway.database,
      engine: hooks.gateway.services.engine,
      config: { ...hooks.gateway.config, ...production, WEBHOOK_ALLOW_PRIVATE_TARGETS: true },
      logger,
      lookup,
    });
    await expect(allowed.create(actor, createInput("http://127.0.0.1:9/hook"))).resolves.toMatchObject({
      secret: expect.any(String),
    });
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
        db: hooks.gateway.database,
        engine: hooks.gateway.services.engine,
        config: {
          ...hooks.gateway.config,
          NODE_ENV: "production",
          WEBHOOK_ALLOW_PRIVATE_TARGETS: false,
          WEBHOOK_TIMEOUT_MS: 300,
        },
        logger: createLogger("webhooks-test", "silent"),
        lookup: never,
      });
      const actor = { urn: `urn:li:corpuser:hooks-dns-${randomUUID()}`, via: "system" as const };
      await expect(service.create(actor, createInput("https://never-answers.example/"))).rejects.toMatchObject({
        code: "BAD_USER_INPUT",
        message: expect.stringMatching(/^input\.url: .*300 ms/),
      });
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
    expect(await hooks.gateway.prisma.auditEvent.count({ where: { action: "webhook.delete", actorUrn: ADMIN } })).toBe(
      1,
    );
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
        hooks.gateway.graphql(
          CREATE,
          { i: { url: `https://x.example/more-${i}`, eventTypes: ["MetadataChangeLog_v1"] } },
          as,
        ),
      update: (i: number) => hooks.gateway.graphql(UPDATE, { i: { id: kept.id, description: `write ${i}` } }, as),
      replay: () => hooks.gateway.graphql(REPLAY, { i: { subscriptionId: kept.id, since: 0 } }, as),
      delete: () => hooks.gateway.graphql(DELETE, { id: doomed.id }, as),
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
    expect(await hooks.gateway.prisma.auditEvent.count({ where: { actorUrn: user } })).toBe(admitted + through.length);
    const created = through.filter((a) => a.kind === "create").length;
    const deleted = through.some((a) => a.kind === "delete") ? 1 : 0;
    expect(await hooks.gateway.prisma.webhookSubscription.count({ where: { ownerUrn: user } })).toBe(
      2 + created - deleted,
    );
  });
});
