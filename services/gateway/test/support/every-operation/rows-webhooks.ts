/** The authorization matrix's rows (principals.ts's `Row`) for webhook subscriptions. */
import { anotherUser, gql, subscriptionOf, WEBHOOK_INPUT, type Row } from "./principals";

export const WEBHOOK_ROWS: Row[] = [
  // Webhooks: any authenticated user subscribes for itself; another user's need MANAGE_SYSTEM_OPERATIONS.
  {
    operation: "Mutation.createWebhookSubscription",
    needs: null,
    call: gql(
      `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { secret } }`,
      () => ({
        i: WEBHOOK_INPUT,
      }),
    ),
  },
  {
    operation: "Query.listWebhookSubscriptions",
    use: "your own",
    needs: null,
    call: gql(`{ listWebhookSubscriptions { total } }`),
  },
  {
    operation: "Query.listWebhookSubscriptions",
    use: "everyone's",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`{ listWebhookSubscriptions(input: {all: true}) { total } }`),
  },
  {
    operation: "Mutation.updateWebhookSubscription",
    use: "your own",
    needs: null,
    call: gql(
      `mutation($id: String!) { updateWebhookSubscription(input: {id: $id, active: false}) { id } }`,
      async (c, f) => ({
        id: await subscriptionOf(f.harness, c.headers),
      }),
    ),
  },
  {
    operation: "Mutation.updateWebhookSubscription",
    use: "another user's",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation($id: String!) { updateWebhookSubscription(input: {id: $id, description: "x"}) { id } }`,
      async (_c, f) => ({
        id: await subscriptionOf(f.harness, anotherUser()),
      }),
    ),
  },
  {
    operation: "Mutation.deleteWebhookSubscription",
    use: "your own",
    needs: null,
    call: gql(`mutation($id: String!) { deleteWebhookSubscription(id: $id) }`, async (c, f) => ({
      id: await subscriptionOf(f.harness, c.headers),
    })),
  },
  {
    operation: "Mutation.deleteWebhookSubscription",
    use: "another user's",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($id: String!) { deleteWebhookSubscription(id: $id) }`, async (_c, f) => ({
      id: await subscriptionOf(f.harness, anotherUser()),
    })),
  },
  {
    operation: "Query.listWebhookDeliveries",
    use: "your own",
    needs: null,
    call: gql(
      `query($id: String!) { listWebhookDeliveries(input: {subscriptionId: $id}) { total } }`,
      async (c, f) => ({
        id: await subscriptionOf(f.harness, c.headers),
      }),
    ),
  },
  {
    operation: "Query.listWebhookDeliveries",
    use: "another user's",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `query($id: String!) { listWebhookDeliveries(input: {subscriptionId: $id}) { total } }`,
      async (_c, f) => ({
        id: await subscriptionOf(f.harness, anotherUser()),
      }),
    ),
  },
  {
    operation: "Mutation.replayWebhookDeliveries",
    use: "your own",
    needs: null,
    call: gql(
      `mutation($id: String!) { replayWebhookDeliveries(input: {subscriptionId: $id, since: 0}) { replayed } }`,
      async (c, f) => ({
        id: await subscriptionOf(f.harness, c.headers),
      }),
    ),
  },
  {
    operation: "Mutation.replayWebhookDeliveries",
    use: "another user's",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation($id: String!) { replayWebhookDeliveries(input: {subscriptionId: $id, since: 0}) { replayed } }`,
      async (_c, f) => ({
        id: await subscriptionOf(f.harness, anotherUser()),
      }),
    ),
  },
  {
    // Its owner's only: another user's is refused to everyone (ACTS_ON_OTHERS).
    operation: "Mutation.rotateWebhookSecret",
    use: "your own",
    needs: null,
    call: gql(
      `mutation($id: String!) { rotateWebhookSecret(id: $id, overlapSeconds: 60) { secret } }`,
      async (c, f) => ({
        id: await subscriptionOf(f.harness, c.headers),
      }),
    ),
  },
];
