/** The CLI's GraphQL documents (with-fragments.ts says how they are read): webhook subscriptions, their deliveries and secrets. */
import { withFragments } from "./with-fragments";

const WEBHOOK_FIELDS = /* GraphQL */ `
  fragment WebhookFields on WebhookSubscription {
    id
    ownerUrn
    url
    eventTypes
    categories
    entityUrn
    actorUrn
    testUrn
    description
    active
    disabledReason
    createdAt
  }
`;

export const CREATE_WEBHOOK = withFragments(
  /* GraphQL */ `
    mutation CreateWebhook($input: CreateWebhookSubscriptionInput!) {
      createWebhookSubscription(input: $input) {
        secret
        subscription {
          ...WebhookFields
        }
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const LIST_WEBHOOKS = withFragments(
  /* GraphQL */ `
    query ListWebhooks($input: ListWebhookSubscriptionsInput) {
      listWebhookSubscriptions(input: $input) {
        total
        subscriptions {
          ...WebhookFields
        }
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const UPDATE_WEBHOOK = withFragments(
  /* GraphQL */ `
    mutation UpdateWebhook($input: UpdateWebhookSubscriptionInput!) {
      updateWebhookSubscription(input: $input) {
        ...WebhookFields
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const DELETE_WEBHOOK = /* GraphQL */ `
  mutation DeleteWebhook($id: String!) {
    deleteWebhookSubscription(id: $id)
  }
`;

export const LIST_WEBHOOK_DELIVERIES = /* GraphQL */ `
  query ListWebhookDeliveries($input: ListWebhookDeliveriesInput!) {
    listWebhookDeliveries(input: $input) {
      total
      deliveries {
        id
        eventId
        eventType
        generation
        status
        attempts
        responseStatus
        durationMs
        error
        createdAt
        deliveredAt
        nextAttemptAt
      }
    }
  }
`;

export const ROTATE_WEBHOOK_SECRET = /* GraphQL */ `
  mutation RotateWebhookSecret($id: String!, $overlapSeconds: Int!) {
    rotateWebhookSecret(id: $id, overlapSeconds: $overlapSeconds) {
      secret
      subscription {
        id
        previousSecretExpiresAt
      }
    }
  }
`;

export const REPLAY_WEBHOOK_DELIVERIES = /* GraphQL */ `
  mutation ReplayWebhookDeliveries($input: ReplayWebhookDeliveriesInput!) {
    replayWebhookDeliveries(input: $input) {
      replayed
      deliveryIds
    }
  }
`;
