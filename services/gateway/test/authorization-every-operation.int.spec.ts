/**
 * The authorization matrix of the delegated-authority model (docs/authorization.md): every GraphQL operation and every
 * HTTP action, each called by six kinds of principal measured against the privilege the operation needs (P):
 *
 * - a user holding no privilege;
 * - a user holding P, with its own token;
 * - a user holding P, with a token scoped without it;
 * - a token minted (by a holder of MANAGE_ACCESS_TOKENS only) for a user who was granted P afterwards;
 * - a child token minted with a shorter-lived token of its user that is scoped without P;
 * - a user who held P when it set up scheduled work, and has lost it since.
 *
 * Only the holder may act (or whoever holds P through the chain: a token's minter, a parent's scopes). The list of rows
 * is compared with the schema the gateway serves and the HTTP routes it mounts, so an operation added without a row
 * fails here.
 */
import { isDeepStrictEqual } from "node:util";
import { createLogger, withImplied, type Privilege } from "@mdp/core";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests } from "@mdp/queues";
import { fireSchedule, scheduledTestKind } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { servedSchema } from "../src/api-docs/graphql-sdl";
import { describeGmsRoutes } from "../src/gms.routes";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { bearer, createToken, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const ENTITY = "urn:li:dataset:(urn:li:dataPlatform:hive,db.every_operation,PROD)";
const DEFINITION = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
});
const MINTER = "urn:li:corpuser:matrix-minter"; // MANAGE_ACCESS_TOKENS only
const OTHER_USER = "urn:li:corpuser:matrix-other"; // holds nothing: any holder of MANAGE_ACCESS_TOKENS may mint for it
const POLICY_USER = "urn:li:corpuser:matrix-policy-user"; // named by the policies the matrix changes

type Outcome = "ok" | "UNAUTHENTICATED" | "FORBIDDEN" | "other";
interface Caller {
  urn: string;
  headers: Record<string, string>;
}
interface Fixtures {
  test: string;
  freshTest(): Promise<string>;
  retentionPolicy: string;
  freshRetentionPolicy(): Promise<string>;
  policy: string;
  freshPolicy(): Promise<string>;
  group: string;
  serviceAccount: string;
  freshServiceAccount(): Promise<string>;
  truncationTask: string;
  ownTokenOf(caller: Caller): Promise<{ id: string; token: string }>;
  harness: Harness;
}
interface Row {
  /** `Query.<field>`, `Mutation.<field>`, or `<METHOD> <path>[?action=<name>]` */
  operation: string;
  /** which use of the operation, when it has several (for yourself, for another user) */
  use?: string;
  /** the privilege this use needs; null: any authenticated caller */
  needs: Privilege | null;
  call(h: Harness, caller: Caller, f: Fixtures): Promise<{ outcome: Outcome; detail: string }>;
}

function gql(
  query: string,
  variables: (caller: Caller, f: Fixtures) => Record<string, unknown> | Promise<Record<string, unknown>> = () => ({}),
) {
  return async (h: Harness, caller: Caller, f: Fixtures) => {
    const res = await h.graphql(query, await variables(caller, f), caller.headers);
    const error = res.body.errors?.[0];
    const code = error?.extensions?.code;
    const outcome: Outcome = !error ? "ok" : code === "FORBIDDEN" || code === "UNAUTHENTICATED" ? code : "other";
    return { outcome, detail: error ? `${code}: ${error.message}` : "ok" };
  };
}

function http(method: "GET" | "POST", path: (f: Fixtures) => string, body: (f: Fixtures) => unknown = () => ({})) {
  return async (h: Harness, caller: Caller, f: Fixtures) => {
    const res = await fetch(`${h.baseUrl}${path(f)}`, {
      method,
      headers: { "content-type": "application/json", ...caller.headers },
      ...(method === "POST" && { body: JSON.stringify(body(f)) }),
    });
    const text = await res.text();
    const outcome: Outcome = res.status === 401 ? "UNAUTHENTICATED" : res.status === 403 ? "FORBIDDEN" : "ok";
    return { outcome, detail: `${res.status} ${text.slice(0, 300)}` };
  };
}

const WEBHOOK_INPUT = { url: "https://hooks.example/matrix", eventTypes: ["MetadataChangeLog_v1"] };
/** A new webhook subscription of the caller `headers` authenticate (its id). */
async function subscriptionOf(h: Harness, headers: Record<string, string>): Promise<string> {
  const res = await h.graphql(
    `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { subscription { id } } }`,
    { i: WEBHOOK_INPUT },
    headers,
  );
  const created = res.body.data?.createWebhookSubscription as { subscription: { id: string } } | undefined;
  if (!created) throw new Error(JSON.stringify(res.body.errors));
  return created.subscription.id;
}

const testInput = (schedule?: string) => ({
  name: "matrix",
  category: "c",
  definition: { json: DEFINITION },
  ...(schedule && { schedule: { cron: schedule } }),
});
const tokenInput = (actorUrn: string) => ({ type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "matrix" });
const CREATE = `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { metadata { id } } }`;

const ROWS: Row[] = [
  { operation: "Query.me", needs: null, call: gql(`{ me { urn } }`) },
  // Any caller reads the stream; each event is filtered by what it may read (platform-events.int.spec.ts).
  {
    operation: "Query.listPlatformEvents",
    needs: null,
    call: gql(`{ listPlatformEvents(count: 5) { events { seq } next oldest } }`),
  },
  // Tokens
  {
    operation: "Mutation.createAccessToken",
    use: "for yourself",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(CREATE, (c) => ({ i: tokenInput(c.urn) })),
  },
  {
    operation: "Mutation.createAccessToken",
    use: "for another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(CREATE, () => ({ i: tokenInput(OTHER_USER) })),
  },
  {
    operation: "Query.getAccessToken",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(`query($i: GetAccessTokenInput!) { getAccessToken(input: $i) { accessToken } }`, (c) => ({
      i: tokenInput(c.urn),
    })),
  },
  {
    operation: "Query.getAccessTokenMetadata",
    use: "of another user's token",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`query($t: String!) { getAccessTokenMetadata(token: $t) { id } }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).token,
    })),
  },
  {
    operation: "Query.listAccessTokens",
    use: "your own",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(
      `query($u: String!) { listAccessTokens(input: {filters: [{field: "actorUrn", value: $u}]}) { total } }`,
      (c) => ({ u: c.urn }),
    ),
  },
  {
    operation: "Query.listAccessTokens",
    use: "everyone's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`{ listAccessTokens(input: {}) { total } }`),
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "another user's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { revokeAccessToken(tokenId: $t) }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).id,
    })),
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`, () => ({ u: OTHER_USER })),
  },
  {
    operation: "Mutation.revokeAccessTokensOutsidePolicy",
    use: "of every user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation { revokeAccessTokensOutsidePolicy }`, () => ({})),
  },
  {
    // A token rotating itself needs no privilege (token-rotation.int.spec.ts); another of yours needs what minting does.
    // The token rotated is one the caller minted with its own credential (so within its scopes and chain), or, when it
    // may not mint, one minted for it.
    operation: "Mutation.rotateAccessToken",
    use: "another token of yours",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`, async (c, f) => ({
      // The fallback is scoped as the caller's credential is: a child's own mint can fail on its lifetime alone (an
      // hour from a credential with less than an hour left, in whole seconds), which must not decide the outcome.
      t: (
        await createToken(f.harness, c.urn, c.headers, { duration: "ONE_HOUR" }).catch(async () =>
          createToken(f.harness, c.urn, systemClientHeaders(ROOT), { scopes: await credentialScopes(f.harness, c) }),
        )
      ).id,
    })),
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).id,
    })),
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, () => ({
      u: OTHER_USER,
    })),
  },
  {
    operation: "Query.delegatedWork",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`query($u: String!) { delegatedWork(input: {ownerUrn: $u}) { urn } }`, () => ({ u: OTHER_USER })),
  },
  // Service accounts
  {
    operation: "Mutation.createAccessToken",
    use: "for a service account",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(CREATE, (_c, f) => ({ i: { ...tokenInput(f.serviceAccount), type: "SERVICE_ACCOUNT" } })),
  },
  {
    operation: "Mutation.createServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`mutation { createServiceAccount(input: {displayName: "matrix"}) { urn } }`),
  },
  {
    operation: "Query.listServiceAccounts",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`{ listServiceAccounts(input: {}) { total } }`),
  },
  {
    operation: "Query.getServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`query($u: String!) { getServiceAccount(urn: $u) { urn } }`, (_c, f) => ({ u: f.serviceAccount })),
  },
  {
    operation: "Mutation.deleteServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`mutation($u: String!) { deleteServiceAccount(urn: $u) }`, async (_c, f) => ({
      u: await f.freshServiceAccount(),
    })),
  },
  // Policies, groups, audit
  { operation: "Query.listPolicies", needs: "MANAGE_POLICIES", call: gql(`{ listPolicies(input: {}) { total } }`) },
  {
    operation: "Query.policy",
    needs: "MANAGE_POLICIES",
    call: gql(`query($u: String!) { policy(urn: $u) { urn } }`, (_c, f) => ({ u: f.policy })),
  },
  {
    operation: "Mutation.createPolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, () => ({
      i: { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } },
    })),
  },
  {
    operation: "Mutation.updatePolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($u: String!, $i: PolicyUpdateInput!) { updatePolicy(urn: $u, input: $i) }`, (_c, f) => ({
      u: f.policy,
      i: { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } },
    })),
  },
  {
    operation: "Mutation.deletePolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($u: String!) { deletePolicy(urn: $u) }`, async (_c, f) => ({ u: await f.freshPolicy() })),
  },
  { operation: "Query.listGroups", needs: "MANAGE_POLICIES", call: gql(`{ listGroups(input: {}) { total } }`) },
  {
    operation: "Mutation.createGroup",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation { createGroup(input: {name: "g"}) }`),
  },
  {
    operation: "Mutation.addGroupMembers",
    needs: "MANAGE_POLICIES",
    call: gql(
      `mutation($g: String!, $u: [String!]!) { addGroupMembers(input: {groupUrn: $g, userUrns: $u}) }`,
      (_c, f) => ({ g: f.group, u: [POLICY_USER] }),
    ),
  },
  {
    operation: "Mutation.removeGroupMembers",
    needs: "MANAGE_POLICIES",
    call: gql(
      `mutation($g: String!, $u: [String!]!) { removeGroupMembers(input: {groupUrn: $g, userUrns: $u}) }`,
      (_c, f) => ({ g: f.group, u: [POLICY_USER] }),
    ),
  },
  {
    operation: "Query.listAuditEvents",
    needs: "MANAGE_POLICIES",
    call: gql(`{ listAuditEvents(input: {}) { total } }`),
  },
  // Tasks
  { operation: "Query.listTasks", needs: "GET_TASK_STATUS", call: gql(`{ listTasks(input: {}) { total } }`) },
  // Retention policies
  {
    operation: "Query.listRetentionPolicies",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`{ listRetentionPolicies(input: {}) { total } }`),
  },
  {
    operation: "Query.retentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`query($u: String!) { retentionPolicy(urn: $u) { urn } }`, (_c, f) => ({ u: f.retentionPolicy })),
  },
  {
    operation: "Mutation.createRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *"}) { urn } }`,
    ),
  },
  {
    operation: "Mutation.updateRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(
      `mutation($u: String!) { updateRetentionPolicy(urn: $u, input: {retainDays: 31}) { urn } }`,
      async (_c, f) => ({ u: await f.freshRetentionPolicy() }),
    ),
  },
  {
    operation: "Mutation.runRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { runRetentionPolicy(urn: $u) }`, (_c, f) => ({ u: f.retentionPolicy })),
  },
  {
    operation: "Mutation.deleteRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, async (_c, f) => ({
      u: await f.freshRetentionPolicy(),
    })),
  },
  {
    operation: "Mutation.resumeRetentionPolicy",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: gql(`mutation($u: String!) { resumeRetentionPolicy(urn: $u) { urn } }`, (_c, f) => ({
      u: f.retentionPolicy,
    })),
  },
  // Metadata tests
  { operation: "Query.listTests", needs: "VIEW_TESTS", call: gql(`{ listTests(input: {}) { total } }`) },
  {
    operation: "Query.test",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!) { test(urn: $u) { urn } }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Query.testResults",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!) { testResults(urn: $u) { passing { test { urn } } } }`, () => ({ u: ENTITY })),
  },
  {
    operation: "Query.testResultHistory",
    needs: "VIEW_TESTS",
    call: gql(`query($u: String!, $t: String!) { testResultHistory(urn: $u, testUrn: $t) { total } }`, (_c, f) => ({
      u: ENTITY,
      t: f.test,
    })),
  },
  {
    operation: "Query.previewTestImpact",
    needs: "MANAGE_TESTS", // as saving the edit (updateTest); a definition without actions needs nothing more
    call: gql(
      `query($t: String!, $j: String!) { previewTestImpact(urn: $t, definition: {json: $j}) { sampled } }`,
      (_c, f) => ({
        t: f.test,
        j: DEFINITION,
      }),
    ),
  },
  {
    operation: "Query.testRunDiff",
    needs: "VIEW_TESTS", // as the test's result history
    call: gql(`query($t: String!) { testRunDiff(testUrn: $t) { runId } }`, (_c, f) => ({ t: f.test })),
  },
  {
    operation: "Mutation.createTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, () => ({ i: testInput() })),
  },
  {
    operation: "Mutation.createTest",
    use: "with a schedule",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, () => ({ i: testInput("0 3 * * *") })),
  },
  {
    operation: "Mutation.updateTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!, $i: UpdateTestInput!) { updateTest(urn: $u, input: $i) }`, async (_c, f) => ({
      u: await f.freshTest(),
      i: testInput("0 4 * * *"),
    })),
  },
  {
    operation: "Mutation.deleteTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { deleteTest(urn: $u) }`, async (_c, f) => ({ u: await f.freshTest() })),
  },
  {
    operation: "Mutation.resumeTestSchedule",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { resumeTestSchedule(urn: $u) }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Mutation.runTest",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { runTest(urn: $u, push: false) }`, (_c, f) => ({ u: f.test })),
  },
  {
    operation: "Query.validateTest",
    needs: "VIEW_TESTS",
    call: gql(`query($i: TestDefinitionInput!) { validateTest(input: $i) { isValid } }`, () => ({
      i: { json: DEFINITION },
    })),
  },
  {
    operation: "Mutation.runTestDefinition",
    needs: "MANAGE_TESTS",
    call: gql(
      `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t, mode: EVALUATE_ONLY) { status } }`,
      () => ({ u: ENTITY, t: { json: DEFINITION } }),
    ),
  },
  {
    operation: "Mutation.runTestDefinition",
    use: "DEFAULT mode, a definition without actions (writes nothing)",
    needs: "MANAGE_TESTS",
    call: gql(
      `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t) { status } }`,
      () => ({ u: ENTITY, t: { json: DEFINITION } }),
    ),
  },
  {
    operation: "Mutation.runTests",
    needs: "MANAGE_TESTS",
    call: gql(`mutation($u: String!) { runTests(urn: $u) }`, () => ({ u: ENTITY })),
  },
  // HTTP: metadata
  {
    operation: "POST /aspects?action=ingestProposal",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/aspects?action=ingestProposal",
      () => ({
        proposal: {
          entityType: "dataset",
          entityUrn: ENTITY,
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
        },
      }),
    ),
  },
  {
    operation: "POST /aspects?action=ingestProposalBatch",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/aspects?action=ingestProposalBatch",
      () => ({
        proposals: [
          {
            entityType: "dataset",
            entityUrn: ENTITY,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
          },
        ],
      }),
    ),
  },
  {
    operation: "POST /aspects?action=getTimeseriesAspectValues",
    needs: "GET_TIMESERIES_ASPECT",
    call: http(
      "POST",
      () => "/gms/aspects?action=getTimeseriesAspectValues",
      () => ({ urn: ENTITY, entity: "dataset", aspect: "datasetProfile" }),
    ),
  },
  {
    operation: "GET /entities/:urn",
    needs: "GET_ENTITY",
    call: http("GET", () => `/gms/entities/${encodeURIComponent(ENTITY)}`),
  },
  // HTTP: operations
  {
    operation: "POST /operations?action=truncateTimeseriesAspect",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=truncateTimeseriesAspect",
      () => ({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1 }),
    ),
  },
  {
    operation: "POST /operations?action=getIndexSizes",
    needs: "GET_TIMESERIES_INDEX_SIZES",
    call: http("POST", () => "/gms/operations?action=getIndexSizes"),
  },
  {
    operation: "POST /operations?action=getTaskStatus",
    needs: "GET_TASK_STATUS",
    call: http(
      "POST",
      () => "/gms/operations?action=getTaskStatus",
      (f) => ({ taskId: f.truncationTask }),
    ),
  },
  {
    operation: "POST /operations?action=getEsTaskStatus",
    needs: "GET_TASK_STATUS",
    call: http(
      "POST",
      () => "/gms/operations?action=getEsTaskStatus",
      (f) => ({ task: f.truncationTask }),
    ),
  },
  {
    operation: "GET /operations/tasks/:taskId",
    needs: "GET_TASK_STATUS",
    call: http("GET", (f) => `/gms/operations/tasks/${f.truncationTask}`),
  },
  {
    operation: "POST /operations?action=listTasks",
    needs: "GET_TASK_STATUS",
    call: http("POST", () => "/gms/operations?action=listTasks"),
  },
  {
    operation: "POST /operations?action=rethrottleTask",
    use: "a truncation (the same privilege as cancelTask)",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=rethrottleTask",
      (f) => ({ taskId: f.truncationTask, rowsPerSecond: 1000 }),
    ),
  },
  {
    operation: "POST /operations?action=cancelTask",
    use: "a truncation",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=cancelTask",
      (f) => ({ taskId: f.truncationTask }),
    ),
  },
  // HTTP: metadata tests
  {
    operation: "POST /test?action=evaluate",
    needs: "VIEW_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=evaluate",
      (f) => ({ urn: ENTITY, testUrns: [f.test] }),
    ),
  },
  {
    operation: "POST /test?action=evaluate",
    use: "with push",
    needs: "MANAGE_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=evaluate",
      (f) => ({ urn: ENTITY, testUrns: [f.test], push: true }),
    ),
  },
  {
    operation: "POST /test?action=batchEvaluate",
    needs: "VIEW_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=batchEvaluate",
      (f) => ({ urns: [ENTITY], testUrns: [f.test] }),
    ),
  },
  // The queue dashboard
  {
    operation: "GET /admin/queues/api/queues",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: http("GET", () => "/admin/queues/api/queues"),
  },
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
        id: await subscriptionOf(f.harness, systemClientHeaders(ROOT)),
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
      id: await subscriptionOf(f.harness, systemClientHeaders(ROOT)),
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
        id: await subscriptionOf(f.harness, systemClientHeaders(ROOT)),
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
        id: await subscriptionOf(f.harness, systemClientHeaders(ROOT)),
      }),
    ),
  },
];

/** Every operation the gateway serves: the schema's query and mutation fields, the /gms routes, the dashboard's API. */
async function servedOperations(): Promise<string[]> {
  const schema = await servedSchema();
  const fields = ["Query", "Mutation"].flatMap((type) =>
    Object.keys(
      schema.getType(type) ? (schema.getType(type) as unknown as { getFields(): object }).getFields() : {},
    ).map((field) => `${type}.${field}`),
  );
  const routes = describeGmsRoutes().map((r) =>
    r.kind === "action" ? `POST ${r.path}?action=${r.name}` : `GET ${r.path}`,
  );
  return [...fields, ...routes, "GET /admin/queues/api/queues"].sort();
}

const KINDS = [
  "holding no privilege",
  "holding it, with its own token",
  "holding it, with a token scoped without it",
  "with a token minted for it before it was granted it",
  "with a child of a shorter-lived token scoped without it",
  "the owner of scheduled work, since it lost it",
] as const;
type Kind = (typeof KINDS)[number];

/** A scope that neither is nor implies `p`: what the scoped tokens are limited to. */
const scopeWithout = (p: Privilege): Privilege =>
  p === "GET_TIMESERIES_ASPECT" ? "GET_ENTITY" : "GET_TIMESERIES_ASPECT";
const MINTER_HOLDS = withImplied(["MANAGE_ACCESS_TOKENS"]);
/** What a child's parent token is scoped to: enough to mint the child, and P's scope-without. */
const parentScopes = (p: Privilege): Privilege[] => ["GENERATE_PERSONAL_ACCESS_TOKENS", scopeWithout(p)];

/** The scopes of the token a caller authenticates with (undefined: unscoped, or not a token). */
async function credentialScopes(h: Harness, caller: Caller): Promise<string[] | undefined> {
  const raw = /^bearer (.+)$/i.exec(caller.headers.authorization ?? "")?.[1];
  if (!raw) return undefined;
  const res = await h.graphql(
    `query($t: String!) { getAccessTokenMetadata(token: $t) { scopes } }`,
    { t: raw },
    systemClientHeaders(ROOT),
  );
  const scopes = (res.body.data?.getAccessTokenMetadata as { scopes: string[] | null } | undefined)?.scopes;
  return scopes ?? undefined;
}

/** Whether a caller of this kind may use `needs` (everyone may use what needs nothing). */
function allowed(kind: Kind, needs: Privilege | null): boolean {
  if (needs === null) return true;
  switch (kind) {
    case "holding it, with its own token":
      return true;
    case "with a token minted for it before it was granted it":
      return MINTER_HOLDS.has(needs);
    case "with a child of a shorter-lived token scoped without it":
      return withImplied(parentScopes(needs)).has(needs);
    case "holding no privilege":
    case "holding it, with a token scoped without it":
    case "the owner of scheduled work, since it lost it":
      return false;
  }
}

describe("authorization matrix: every operation, every kind of principal", () => {
  let h: Harness;
  let worker: RunningWorker;
  let fixtures: Fixtures;
  const root = systemClientHeaders(ROOT);
  const callers = new Map<string, Caller>();

  async function asRoot<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const res = await h.graphql(query, variables, root);
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data as T;
  }
  const grantPolicy = async (user: string, privileges: string[]) =>
    (
      await asRoot<{ createPolicy: string }>(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: `matrix ${user}`, state: "ACTIVE", privileges, actors: { users: [user] } },
      })
    ).createPolicy;

  /** The caller of `kind` for privilege `p` (null: the one holding nothing), set up on first use. */
  async function callerFor(kind: Kind, p: Privilege | null): Promise<Caller> {
    const key = kind === "holding no privilege" || p === null ? "nothing" : `${kind}/${p}`;
    const known = callers.get(key);
    if (known) return known;
    const slug = `${KINDS.indexOf(kind)}-${(p ?? "none").toLowerCase().replaceAll("_", "-")}`;
    const urn = `urn:li:corpuser:matrix-${slug}`;
    let caller: Caller;
    if (kind === "holding no privilege" || p === null) {
      caller = { urn, headers: bearer((await createToken(h, urn)).token) };
    } else if (kind === "holding it, with its own token") {
      await grantPolicy(urn, [p]);
      caller = { urn, headers: bearer((await createToken(h, urn)).token) };
    } else if (kind === "holding it, with a token scoped without it") {
      await grantPolicy(urn, [p, scopeWithout(p)]);
      caller = { urn, headers: bearer((await createToken(h, urn, root, { scopes: [scopeWithout(p)] })).token) };
    } else if (kind === "with a token minted for it before it was granted it") {
      const minter = bearer((await createToken(h, MINTER)).token);
      const minted = await createToken(h, urn, minter);
      await grantPolicy(urn, [p]);
      caller = { urn, headers: bearer(minted.token) };
    } else if (kind === "with a child of a shorter-lived token scoped without it") {
      await grantPolicy(urn, [p, ...parentScopes(p)]);
      const parent = await createToken(h, urn, root, { duration: "ONE_DAY", scopes: parentScopes(p) });
      const child = await createToken(h, urn, bearer(parent.token), { duration: "ONE_HOUR" });
      caller = { urn, headers: bearer(child.token) };
    } else {
      // Sets up a scheduled test while it holds P and MANAGE_TESTS, then loses both.
      const policy = await grantPolicy(urn, [p, "MANAGE_TESTS"]);
      const headers = bearer((await createToken(h, urn)).token);
      const created = await h.graphql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        { i: testInput("0 3 * * *") },
        headers,
      );
      expect(created.body.errors).toBeUndefined();
      await asRoot(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: policy });
      caller = { urn, headers };
    }
    callers.set(key, caller);
    return caller;
  }

  beforeAll(async () => {
    h = await startGateway({
      RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "1000",
      RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1000",
      MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: "1000",
    });
    worker = await startEvaluationWorker(h, 2, { threads: 1 });
    await grantPolicy(MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const ingested = await h.post("/gms/aspects?action=ingestProposal", {
      proposal: {
        entityType: "dataset",
        entityUrn: ENTITY,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
      },
    });
    expect(ingested.status).toBe(200);
    const freshTest = async () =>
      (
        await asRoot<{ createTest: string }>(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, {
          i: testInput(),
        })
      ).createTest;
    const freshRetentionPolicy = async () =>
      (
        await asRoot<{ createRetentionPolicy: { urn: string } }>(
          `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "operation", retainDays: 9, cron: "0 0 1 1 *"}) { urn } }`,
        )
      ).createRetentionPolicy.urn;
    const freshPolicy = () => grantPolicy(POLICY_USER, ["VIEW_TESTS"]);
    const freshServiceAccount = async () =>
      (await asRoot<{ createServiceAccount: { urn: string } }>(`mutation { createServiceAccount(input: {}) { urn } }`))
        .createServiceAccount.urn;
    const truncation = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: 1,
      dryRun: false,
    });
    expect(truncation.status).toBe(200);
    const task = await h.prisma.task.findFirstOrThrow({ where: { type: "TRUNCATE_TIMESERIES" }, select: { id: true } });
    fixtures = {
      test: await freshTest(),
      freshTest,
      retentionPolicy: await freshRetentionPolicy(),
      freshRetentionPolicy,
      policy: await freshPolicy(),
      freshPolicy,
      group: (await asRoot<{ createGroup: string }>(`mutation { createGroup(input: {name: "matrix"}) }`)).createGroup,
      serviceAccount: await freshServiceAccount(),
      freshServiceAccount,
      truncationTask: task.id,
      ownTokenOf: (caller) => createToken(h, caller.urn),
      harness: h,
    };
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("has a row for every operation the gateway serves, and none for one it does not", async () => {
    const rows = [...new Set(ROWS.map((r) => r.operation))].sort();
    const served = await servedOperations();
    expect({
      missing: served.filter((o) => !rows.includes(o)),
      unknown: rows.filter((o) => !served.includes(o)),
    }).toEqual({
      missing: [],
      unknown: [],
    });
    expect(isDeepStrictEqual(rows, served)).toBe(true);
  });

  describe.each(KINDS)("a caller %s", (kind) => {
    it.each(ROWS.map((r) => [`${r.operation}${r.use ? ` (${r.use})` : ""}`, r] as const))("%s", async (_name, row) => {
      const caller = await callerFor(kind, row.needs);
      const result = await row.call(h, caller, fixtures);
      if (allowed(kind, row.needs)) {
        expect({
          refused: result.outcome === "FORBIDDEN" || result.outcome === "UNAUTHENTICATED",
          detail: result.detail,
        }).toEqual({
          refused: false,
          detail: expect.any(String),
        });
      } else {
        expect({ outcome: result.outcome, detail: result.detail }).toEqual({
          outcome: "FORBIDDEN",
          detail: expect.any(String),
        });
      }
    });
  });

  it("suspends, at its next firing, the scheduled work of every owner who lost what it needs", async () => {
    const owners = [...callers.entries()].filter(([key]) => key.startsWith("the owner of scheduled work"));
    expect(owners.length).toBeGreaterThan(0);
    const logger = createLogger("matrix-firings", h.config.LOG_LEVEL);
    const connection = createRedis(h.config.REDIS_URL, "producer");
    const rateLimits = new RateLimits(RateLimits.connect(h.config, logger), h.config);
    try {
      const deps = {
        db: h.database,
        tasks: new TaskLifecycle(h.database, logger),
        producers: { evaluate: new Producer("evaluate", connection, h.config.QUEUE_PREFIX) },
        sync: new ScheduleSyncRequests(new Producer("scheduleSync", connection, h.config.QUEUE_PREFIX)),
        logger,
        urnNamespace: h.config.URN_NAMESPACE,
        rootUserUrn: h.config.ROOT_USER_URN,
        rateLimits,
      };
      for (const [, owner] of owners) {
        const test = await h.prisma.metadataTest.findFirstOrThrow({ where: { ownerUrn: owner.urn } });
        expect(await fireSchedule(scheduledTestKind, test.urn, deps)).toEqual({ suspended: ["MANAGE_TESTS"] });
        expect(await h.prisma.task.count({ where: { createdBy: owner.urn } })).toBe(0);
      }
    } finally {
      await rateLimits.close();
      await closeRedis(connection);
    }
  });
});
