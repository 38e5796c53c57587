/**
 * The gateway, webhook worker and receivers the webhooks tests run against (webhooks-*.int.spec.ts), started in
 * beforeAll and closed in afterAll, and the helpers those tests call. Call it once inside a describe; `gateway` and
 * `worker` are set by the time the tests run.
 */
import { ROOT, grant, startGateway, systemClientHeaders, type GraphQLBody, type Harness } from "./gateway-harness";
import { startReceiver, type Receiver } from "./webhook-receiver";
import { startWebhookWorker, type WebhookWorker } from "./webhook-worker";
import { READER, LOSER, ADMIN, REPLAYER, CREATE, DELIVERIES, type Delivery } from "./webhooks";

export interface WebhooksHarness {
  gateway: Harness;
  worker: WebhookWorker;
  /** The body's data, throwing on any error. */
  gql: <T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, actor?: string) => Promise<T>;
  /** The first error of the answer, if any. */
  gqlError: (
    query: string,
    variables: Record<string, unknown>,
    actor?: string,
  ) => Promise<NonNullable<GraphQLBody["errors"]>[number] | undefined>;
  /** A new receiver, closed in afterAll. */
  receiver: () => Promise<Receiver>;
  subscribe: (
    actor: string,
    url: string,
    more?: Record<string, unknown>,
  ) => Promise<{ secret: string; subscription: { id: string } }>;
  /** Writes the dataset's description, which the worker fans out as a MetadataChangeLog_v1. */
  ingest: (urn: string, description: string) => Promise<void>;
  deliveries: (subscriptionId: string, actor?: string) => Promise<Delivery[]>;
}

export function startWebhooksHarness(): WebhooksHarness {
  const receivers: Receiver[] = [];
  const gql = async <T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, actor = ROOT) => {
    const body = (await hooks.gateway.graphql(query, variables, systemClientHeaders(actor))).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data as T;
  };
  const hooks: WebhooksHarness = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined!,
    worker: undefined!,
    gql,
    gqlError: async (query, variables, actor = ROOT) => {
      const body = (await hooks.gateway.graphql(query, variables, systemClientHeaders(actor))).body;
      return body.errors?.[0];
    },
    receiver: async () => {
      const r = await startReceiver();
      receivers.push(r);
      return r;
    },
    subscribe: async (actor, url, more = {}) =>
      (
        await gql<{ createWebhookSubscription: { secret: string; subscription: { id: string } } }>(
          CREATE,
          { i: { url, eventTypes: ["MetadataChangeLog_v1"], ...more } },
          actor,
        )
      ).createWebhookSubscription,
    ingest: async (urn, description) => {
      const proposal = {
        entityType: "dataset",
        entityUrn: urn,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
      };
      const res = await hooks.gateway.post("/gms/aspects?action=ingestProposalBatch", { proposals: [proposal] });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    },
    deliveries: async (subscriptionId, actor = ROOT) =>
      (await gql<{ listWebhookDeliveries: { deliveries: Delivery[] } }>(DELIVERIES, { i: { subscriptionId } }, actor))
        .listWebhookDeliveries.deliveries,
  };

  beforeAll(async () => {
    hooks.gateway = await startGateway({
      WEBHOOK_RETRY_SCHEDULE: "0,100ms,200ms,400ms,800ms",
      WEBHOOK_TIMEOUT_MS: "30000",
      WEBHOOK_DELIVERY_CONCURRENCY: "4",
      WEBHOOK_SUBSCRIPTION_CONCURRENCY: "1",
      MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: "4",
    });
    await grant(hooks.gateway, READER, ["GET_ENTITY"]);
    await grant(hooks.gateway, LOSER, ["GET_ENTITY"]);
    await grant(hooks.gateway, ADMIN, ["MANAGE_SYSTEM_OPERATIONS"]);
    await grant(hooks.gateway, REPLAYER, ["GET_ENTITY"]);
    hooks.worker = await startWebhookWorker(hooks.gateway);
  });
  afterAll(async () => {
    for (const r of receivers) r.release();
    await hooks.worker?.close();
    await Promise.all(receivers.map((r) => r.close()));
    await hooks.gateway?.close();
  });
  return hooks;
}
