/** The seventh principal's rows (others-context.ts's `OthersRow`) on retention policies, tasks, webhook subscriptions, service accounts, policies and groups. */
import { bearer, ROOT, systemClientHeaders } from "../gateway-harness";
import { POLICY_USER, subscriptionOf, WEBHOOK_INPUT } from "./principals";
import { OWNER, ownersRetentionPolicy, type OthersRow } from "./others-context";

export const ADMIN_ROWS: OthersRow[] = [
  // Retention policies
  ...(
    [
      [
        "Mutation.updateRetentionPolicy",
        `mutation($u: String!) { updateRetentionPolicy(urn: $u, input: {retainDays: 31}) { urn } }`,
      ],
      ["Mutation.resumeRetentionPolicy", `mutation($u: String!) { resumeRetentionPolicy(urn: $u) { urn } }`],
    ] as const
  ).map(([operation, mutation]): OthersRow => ({
    operation,
    use: "another user's policy",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const policy = await ownersRetentionPolicy(c);
      await c.h.prisma.retentionPolicy.update({
        where: { id: policy.split(":").at(-1) },
        data: { suspendedAt: new Date(), suspendedReason: "matrix" },
      });
      const res = await c.gql(mutation, { u: policy }, c.caller.headers);
      expect(res.detail).toBe("ok");
      const row = await c.h.prisma.retentionPolicy.findUniqueOrThrow({ where: { id: policy.split(":").at(-1) } });
      expect({ owner: row.ownerUrn, via: row.ownerTokenId }).toEqual({ owner: c.caller.urn, via: c.caller.token.id });
    },
  })),
  {
    operation: "Mutation.runRetentionPolicy",
    use: "another user's policy",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const policy = await ownersRetentionPolicy(c);
      const res = await c.gql(
        `mutation($u: String!) { runRetentionPolicy(urn: $u, dryRun: false) }`,
        { u: policy },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const task = await c.h.prisma.task.findFirstOrThrow({
        where: { id: (res.data!.runRetentionPolicy as string).split(":").at(-1) },
      });
      expect(task.createdBy).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.deleteRetentionPolicy",
    use: "another user's policy",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const policy = await ownersRetentionPolicy(c);
      const res = await c.gql(
        `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`,
        { u: policy },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
    },
  },
  // Tasks: steering another user's task needs the task type's privilege and produces nothing.
  ...(
    [
      ["POST /operations?action=cancelTask", "cancelTask", {}],
      ["POST /operations?action=rethrottleTask", "rethrottleTask", { rowsPerSecond: 500 }],
    ] as const
  ).map(([operation, action, more]): OthersRow => ({
    operation,
    use: "another user's truncation",
    holds: ["TRUNCATE_TIMESERIES_INDEX"],
    async run(c) {
      const started = await c.h.post(
        "/gms/operations?action=truncateTimeseriesAspect",
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, dryRun: false },
        bearer(c.ownerToken.token),
      );
      expect(started.status).toBe(200);
      const task = await c.h.prisma.task.findFirstOrThrow({
        where: { createdBy: OWNER, type: "TRUNCATE_TIMESERIES" },
        orderBy: { createdAt: "desc" },
      });
      const res = await c.h.post(`/gms/operations?action=${action}`, { taskId: task.id, ...more }, c.caller.headers);
      expect(res.status).toBe(200);
      expect((await c.h.prisma.task.findUniqueOrThrow({ where: { id: task.id } })).createdBy).toBe(OWNER);
    },
  })),
  // Webhooks: a subscription acts for its owner; another user's url stays the owner's to choose.
  {
    operation: "Mutation.createWebhookSubscription",
    use: "filtered on another user's events",
    holds: [],
    async run(c) {
      const res = await c.gql(
        `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { subscription { id } } }`,
        { i: { ...WEBHOOK_INPUT, actorUrn: OWNER } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const id = (res.data!.createWebhookSubscription as { subscription: { id: string } }).subscription.id;
      const row = await c.h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id } });
      expect({ owner: row.ownerUrn, via: row.ownerTokenId }).toEqual({ owner: c.caller.urn, via: c.caller.token.id });
    },
  },
  {
    operation: "Mutation.updateWebhookSubscription",
    use: "another user's url",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const id = await subscriptionOf(c.h, bearer(c.ownerToken.token));
      const res = await c.gql(
        `mutation($id: String!) { updateWebhookSubscription(input: {id: $id, url: "https://hooks.example/taken"}) { id } }`,
        { id },
        c.caller.headers,
      );
      expect(res.detail).not.toBe("ok");
      const row = await c.h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id } });
      expect({ owner: row.ownerUrn, url: row.url }).toEqual({ owner: OWNER, url: WEBHOOK_INPUT.url });
    },
  },
  {
    operation: "Mutation.rotateWebhookSecret",
    use: "another user's secret",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const id = await subscriptionOf(c.h, bearer(c.ownerToken.token));
      const before = await c.h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id } });
      const res = await c.gql(
        `mutation($id: String!) { rotateWebhookSecret(id: $id, overlapSeconds: 60) { secret } }`,
        { id },
        c.caller.headers,
      );
      // The secret proves deliveries to the owner's receiver: whoever held a new one could forge them.
      expect(res.detail).toMatch(/^FORBIDDEN: .*only its owner/);
      const row = await c.h.prisma.webhookSubscription.findUniqueOrThrow({ where: { id } });
      expect({ owner: row.ownerUrn, secret: row.secretSealed }).toEqual({ owner: OWNER, secret: before.secretSealed });
    },
  },
  ...(
    [
      ["Mutation.deleteWebhookSubscription", `mutation($id: String!) { deleteWebhookSubscription(id: $id) }`],
      [
        "Mutation.replayWebhookDeliveries",
        `mutation($id: String!) { replayWebhookDeliveries(input: {subscriptionId: $id, since: 0}) { replayed } }`,
      ],
    ] as const
  ).map(([operation, mutation]): OthersRow => ({
    operation,
    use: "another user's subscription",
    holds: ["MANAGE_SYSTEM_OPERATIONS"],
    async run(c) {
      const id = await subscriptionOf(c.h, bearer(c.ownerToken.token));
      const res = await c.gql(mutation, { id }, c.caller.headers);
      expect(res.detail).toBe("ok");
      const row = await c.h.prisma.webhookSubscription.findUnique({ where: { id } });
      if (row) expect({ owner: row.ownerUrn, url: row.url }).toEqual({ owner: OWNER, url: WEBHOOK_INPUT.url });
    },
  })),
  // Service accounts, policies and groups have no owner whose authority a call could borrow: the caller's
  // MANAGE_SERVICE_ACCOUNTS or MANAGE_POLICIES is the whole authority, and the change is audited as the caller's.
  {
    operation: "Mutation.deleteServiceAccount",
    use: "one another user created",
    holds: ["MANAGE_SERVICE_ACCOUNTS"],
    async run(c) {
      const created = await c.gql(
        `mutation { createServiceAccount(input: {}) { urn } }`,
        {},
        bearer(c.ownerToken.token),
      );
      const urn = (created.data!.createServiceAccount as { urn: string }).urn;
      const res = await c.gql(`mutation($u: String!) { deleteServiceAccount(urn: $u) }`, { u: urn }, c.caller.headers);
      expect(res.detail).toBe("ok");
    },
  },
  ...(
    [
      ["Mutation.updatePolicy", `mutation($u: String!, $i: PolicyUpdateInput!) { updatePolicy(urn: $u, input: $i) }`],
      ["Mutation.deletePolicy", `mutation($u: String!) { deletePolicy(urn: $u) }`],
    ] as const
  ).map(([operation, mutation]): OthersRow => ({
    operation,
    use: "a policy another user created",
    holds: ["MANAGE_POLICIES"],
    async run(c) {
      const created = await c.gql(
        `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
        { i: { name: "others", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } } },
        systemClientHeaders(ROOT),
      );
      const policy = created.data!.createPolicy as string;
      const res = await c.gql(
        mutation,
        {
          u: policy,
          i: { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } },
        },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
    },
  })),
  {
    operation: "Mutation.createGroup",
    use: "with the id of a group another user created",
    holds: ["MANAGE_POLICIES"],
    async run(c) {
      const id = `others-${c.caller.urn.split(":").at(-1)}`;
      const created = await c.gql(
        `mutation($i: CreateGroupInput!) { createGroup(input: $i) }`,
        { i: { id, name: "theirs" } },
        systemClientHeaders(ROOT),
      );
      expect(created.detail).toBe("ok");
      const res = await c.gql(
        `mutation($i: CreateGroupInput!) { createGroup(input: $i) }`,
        { i: { id, name: "mine" } },
        c.caller.headers,
      );
      expect(res.detail).not.toBe("ok");
      expect(
        (await c.h.prisma.group.findUniqueOrThrow({ where: { urn: created.data!.createGroup as string } })).name,
      ).toBe("theirs");
    },
  },
  ...(["Mutation.addGroupMembers", "Mutation.removeGroupMembers"] as const).map((operation): OthersRow => ({
    operation,
    use: "a group another user created",
    holds: ["MANAGE_POLICIES"],
    async run(c) {
      const created = await c.gql(`mutation { createGroup(input: {name: "others"}) }`, {}, systemClientHeaders(ROOT));
      const field = operation.slice("Mutation.".length);
      const res = await c.gql(
        `mutation($g: String!, $u: [String!]!) { ${field}(input: {groupUrn: $g, userUrns: $u}) }`,
        { g: created.data!.createGroup as string, u: [POLICY_USER] },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
    },
  })),
];
