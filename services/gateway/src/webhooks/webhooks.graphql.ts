import { resolver } from "../graphql/resolver";
import { createArgs, deliveriesArgs, idArgs, listArgs, replayArgs, rotateArgs, updateArgs } from "./webhook-contracts";

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
    "Why it was turned off, when revokeActorAccess or WEBHOOK_DISABLE_AFTER_DAYS of failures did"
    disabledReason: String
    "Its receiver's circuit: OPEN after WEBHOOK_CIRCUIT_FAILURES failed attempts in a row (deliveries paused, probed)"
    circuit: WebhookCircuit!
    "Attempts failed one after another (a 2xx resets it)"
    consecutiveFailures: Int!
    "Since when every attempt failed (epoch ms); null once one succeeds. Turned off after WEBHOOK_DISABLE_AFTER_DAYS."
    failingSince: Long
    "Deliveries dropped unsent (SKIPPED) past WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION pending, in all"
    droppedDeliveries: Long!
    "While a rotated-out secret still signs deliveries (rotateWebhookSecret's overlap): until when (epoch ms)"
    previousSecretExpiresAt: Long
    createdAt: Long!
    updatedAt: Long!
  }

  "A subscription's circuit breaker (docs/webhooks.md, When a receiver keeps failing)."
  type WebhookCircuit {
    "CLOSED: deliveries flow. OPEN: paused; one delivery is tried (a probe) at nextProbeAt, and a success closes it."
    state: String!
    "When it opened (epoch ms); null when closed"
    openedAt: Long
    "When the next probe is due (epoch ms); each failed probe doubles the wait, up to an hour"
    nextProbeAt: Long
  }

  type RotatedWebhookSecret {
    subscription: WebhookSubscription!
    "The new signing secret (whsec_…): shown this once. The previous one signs too until previousSecretExpiresAt."
    secret: String!
  }

  type CreatedWebhookSubscription {
    subscription: WebhookSubscription!
    "The signing secret (whsec_…): shown this once, never again. Verify each delivery's webhook-signature (or mdp-signature) with it."
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
    "PENDING (queued or retrying), DELIVERED (a 2xx), FAILED (attempts spent, or refused), SKIPPED (never sent: its owner may not read it, its subscription was turned off, or it was dropped past WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION)"
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
    "A PENDING delivery's next attempt (epoch ms; WEBHOOK_RETRY_SCHEDULE, not before an open circuit's probe); null once it ended"
    nextAttemptAt: Long
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
    listWebhookSubscriptions(
      "Whose (owner, or all) and the page; absent: yours, the first page."
      input: ListWebhookSubscriptionsInput
    ): WebhookSubscriptionPage!
    "A subscription's delivery log (its owner, or MANAGE_SYSTEM_OPERATIONS), newest first; kept WEBHOOK_DELIVERY_RETENTION_DAYS."
    listWebhookDeliveries(
      "The subscription's id, an optional status and the page."
      input: ListWebhookDeliveriesInput!
    ): WebhookDeliveryPage!
  }

  extend type Mutation {
    """
    Subscribes the caller to events (any authenticated user, for itself; at most MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER).
    Answers the signing secret once. Each write here (create, update, delete, replay) takes from the caller's audit
    budget: past 30 at once, then 30 a minute, TOO_MANY_REQUESTS (429) and nothing written.
    """
    createWebhookSubscription(
      "The endpoint's url, the event types and optional filters."
      input: CreateWebhookSubscriptionInput!
    ): CreatedWebhookSubscription!
    "Changes a subscription's url, filters, description or active (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    updateWebhookSubscription(
      "The subscription's id and the fields to change."
      input: UpdateWebhookSubscriptionInput!
    ): WebhookSubscription!
    "Deletes a subscription and its delivery log (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    deleteWebhookSubscription("The subscription's id." id: String!): Boolean!
    "Sends chosen deliveries again, with the same event ids (its owner, or MANAGE_SYSTEM_OPERATIONS)."
    replayWebhookDeliveries(
      "The subscription's id and which deliveries: since a time, or by id."
      input: ReplayWebhookDeliveriesInput!
    ): ReplayedWebhookDeliveries!
    """
    A new signing secret for a subscription (its owner only), answered once; the one it replaces signs deliveries too
    for overlapSeconds (0 to 604800, 7 days), each delivery then carrying both signatures.
    """
    rotateWebhookSecret(
      "The subscription's id."
      id: String!
      "How long the replaced secret keeps signing beside the new one, in seconds (0 to 604800)."
      overlapSeconds: Int!
    ): RotatedWebhookSecret!
  }
`;

/**
 * Any authenticated caller may manage its own subscriptions: each operation declares its contract here, and its
 * service checks the admin privilege where the subscription, or the owner asked for, is another user's.
 */
export const webhookResolvers = {
  Query: {
    listWebhookSubscriptions: resolver({ requires: null, args: listArgs }, (s, actor, args) =>
      s.webhooks.list(actor, args),
    ),
    listWebhookDeliveries: resolver({ requires: null, args: deliveriesArgs }, (s, actor, args) =>
      s.webhooks.listDeliveries(actor, args),
    ),
  },
  Mutation: {
    createWebhookSubscription: resolver({ requires: null, args: createArgs }, (s, actor, args) =>
      s.webhooks.create(actor, args),
    ),
    updateWebhookSubscription: resolver({ requires: null, args: updateArgs }, (s, actor, args) =>
      s.webhooks.update(actor, args),
    ),
    deleteWebhookSubscription: resolver({ requires: null, args: idArgs }, (s, actor, args) =>
      s.webhooks.delete(actor, args),
    ),
    replayWebhookDeliveries: resolver({ requires: null, args: replayArgs }, (s, actor, args) =>
      s.webhooks.replay(actor, args),
    ),
    rotateWebhookSecret: resolver({ requires: null, args: rotateArgs }, (s, actor, args) =>
      s.webhooks.rotateSecret(actor, args),
    ),
  },
};
