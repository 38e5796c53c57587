import type { GraphQLContext } from "../graphql/context";

export const webhookTypeDefs = /* GraphQL */ `
  "A webhook subscription (docs/webhooks.md): events its owner may read, POSTed signed to its url."
  type WebhookSubscription {
    id: String!
    "urn:li:webhookSubscription:<id>, as audit rows name it"
    urn: String!
    "Its one principal: its creator. An event is delivered only if the owner may read it at the delivery."
    ownerUrn: String!
    url: String!
    "MetadataChangeLog_v1, EntityChangeEvent_v1 (docs/events.md (the events))"
    eventTypes: [String!]!
    "EntityChangeEvent_v1 categories it is limited to (ACCESS_TOKEN, TASK, TEST_RESULT, SCHEDULE); empty: any"
    categories: [String!]!
    "Only events about this entity"
    entityUrn: String
    "Only events about this user, or made by it"
    actorUrn: String
    "Only events about this test (its definition, or its results)"
    testUrn: String
    description: String
    "Off: nothing is delivered (turned off by its owner, an admin, or revokeActorAccess)"
    active: Boolean!
    "Why it was turned off, when revokeActorAccess did"
    disabledReason: String
    createdAt: Long!
    updatedAt: Long!
  }

  type CreatedWebhookSubscription {
    subscription: WebhookSubscription!
    "The signing secret (whsec_…): shown this once, never again. Verify each delivery's mdp-signature with it."
    secret: String!
  }

  input CreateWebhookSubscriptionInput {
    "http or https, at most 2,048 characters, no user:password@; in production not resolving to a private address"
    url: String!
    eventTypes: [String!]!
    categories: [String!]
    entityUrn: String
    actorUrn: String
    testUrn: String
    "At most 512 characters"
    description: String
  }

  input UpdateWebhookSubscriptionInput {
    id: String!
    url: String
    eventTypes: [String!]
    "null clears a filter; absent leaves it"
    categories: [String!]
    entityUrn: String
    actorUrn: String
    testUrn: String
    description: String
    active: Boolean
  }

  input ListWebhookSubscriptionsInput {
    start: Int
    count: Int
    "Another user's (MANAGE_SYSTEM_OPERATIONS); absent: your own"
    ownerUrn: String
    "Everyone's (MANAGE_SYSTEM_OPERATIONS)"
    all: Boolean
  }

  type WebhookSubscriptionPage {
    total: Int!
    subscriptions: [WebhookSubscription!]!
  }

  "One event's delivery to one subscription: the delivery log."
  type WebhookDelivery {
    "The delivery's id (the mdp-delivery-id header); a replay is a new delivery"
    id: String!
    subscriptionId: String!
    "The event's id (the mdp-event-id header): the same for every delivery of one event"
    eventId: String!
    "The event's position in the stream (listPlatformEvents' cursor)"
    eventSeq: String!
    eventType: String!
    "0: the first delivery; 1, 2, …: replays"
    generation: Int!
    "PENDING (queued or retrying), DELIVERED (a 2xx), FAILED (attempts spent, or refused), SKIPPED (its owner may not read it; never sent)"
    status: String!
    "POSTs made so far"
    attempts: Int!
    "The last response's status; null when none came"
    responseStatus: Int
    "The last attempt's duration (ms)"
    durationMs: Int
    "Why the last attempt failed or the delivery was skipped (at most 512 characters)"
    error: String
    createdAt: Long!
    updatedAt: Long!
    deliveredAt: Long
  }

  input ListWebhookDeliveriesInput {
    subscriptionId: String!
    "PENDING, DELIVERED, FAILED or SKIPPED"
    status: String
    start: Int
    "At most 500"
    count: Int
  }

  type WebhookDeliveryPage {
    total: Int!
    "Newest first"
    deliveries: [WebhookDelivery!]!
  }

  input ReplayWebhookDeliveriesInput {
    subscriptionId: String!
    "Every delivery created at or after this time (epoch ms); or:"
    since: Long
    "These deliveries (at most 1,000)"
    deliveryIds: [String!]
    "At most this many events (default 100, at most 1,000), oldest first"
    limit: Int
  }

  type ReplayedWebhookDeliveries {
    replayed: Int!
    "The new deliveries' ids"
    deliveryIds: [String!]!
  }

  extend type Query {
    "Your webhook subscriptions (another user's, or all, with MANAGE_SYSTEM_OPERATIONS), newest first."
    listWebhookSubscriptions(input: ListWebhookSubscriptionsInput): WebhookSubscriptionPage!
    "A subscription's delivery log (its owner, or MANAGE_SYSTEM_OPERATIONS), newest first; kept WEBHOOK_DELIVERY_RETENTION_DAYS."
    listWebhookDeliveries(input: ListWebhookDeliveriesInput!): WebhookDeliveryPage!
  }

  extend type Mutation {
    """
    Subscribes the caller to events (any authenticated user, for itself; at most MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER).
    Answers the signing secret once.
    """
    createWebhookSubscription(input: CreateWebhookSubscriptionInput!): CreatedWebhookSubscription!
    "Changes a subscription's url, filters, description or active (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    updateWebhookSubscription(input: UpdateWebhookSubscriptionInput!): WebhookSubscription!
    "Deletes a subscription and its delivery log (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    deleteWebhookSubscription(id: String!): Boolean!
    "Sends chosen deliveries again, with the same event ids (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    replayWebhookDeliveries(input: ReplayWebhookDeliveriesInput!): ReplayedWebhookDeliveries!
  }
`;

export const webhookResolvers = {
  Query: {
    listWebhookSubscriptions: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.list(ctx.actor, args),
    listWebhookDeliveries: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.listDeliveries(ctx.actor, args),
  },
  Mutation: {
    createWebhookSubscription: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.create(ctx.actor, args),
    updateWebhookSubscription: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.update(ctx.actor, args),
    deleteWebhookSubscription: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.delete(ctx.actor, args),
    replayWebhookDeliveries: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webhooks.replay(ctx.actor, args),
  },
};
