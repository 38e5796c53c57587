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
 *
 * A seventh principal acts on an object another user owns (ACTS_ON_OTHERS below): it holds only what the operation
 * needs, the object's owner holds everything the object's work could use, and what the call produces (a token, a
 * task, a push's writes, an owner) must be bounded by the caller, or the call refused. Every mutation and HTTP action
 * that takes an object's id must have such a row.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { getNamedType, isInputObjectType } from "graphql";
import { createLogger, withImplied, type Privilege } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests } from "@mdp/queues";
import { fireSchedule, scheduledTestKind } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { servedSchema } from "../src/api-docs/graphql-sdl";
import { describeGmsRoutes } from "../src/gms.routes";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import {
  bearer,
  createToken,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const ENTITY = "urn:li:dataset:(urn:li:dataPlatform:hive,db.every_operation,PROD)";
const DEFINITION = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
});
const MINTER = "urn:li:corpuser:matrix-minter"; // MANAGE_ACCESS_TOKENS only
const OTHER_USER = "urn:li:corpuser:matrix-other"; // holds nothing: any holder of MANAGE_ACCESS_TOKENS may mint for it
const POLICY_USER = "urn:li:corpuser:matrix-policy-user"; // named by the policies the matrix changes

type Outcome = "ok" | "UNAUTHENTICATED" | "FORBIDDEN" | "other";
/** What a route no privilege opens needs: the system client's credentials (DataHub's frontend signing users in). */
const SYSTEM_CLIENT = "SYSTEM_CLIENT";
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
  /** the privilege this use needs; null: any authenticated caller; SYSTEM_CLIENT: no user, only the system client */
  needs: Privilege | null | typeof SYSTEM_CLIENT;
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
/**
 * A new webhook subscription of the caller `headers` authenticate (its id). Subscription writes are budgeted per actor
 * (30 at once, then 30 a minute), so rows that need "another user's" subscription make it for a user of their own.
 */
let otherSubscriptionOwners = 0;
const anotherUser = () => systemClientHeaders(`urn:li:corpuser:matrix-subscriber-${++otherSubscriptionOwners}`);
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
  // DataHub's web app: the shell's configuration and roles (none held) to anyone; who holds tokens to a token manager.
  { operation: "Query.appConfig", needs: null, call: gql(`{ appConfig { authConfig { tokenAuthEnabled } } }`) },
  { operation: "Query.listRoles", needs: null, call: gql(`{ listRoles(input: {}) { total } }`) },
  {
    operation: "Query.listUsers",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`{ listUsers(input: {}) { total users { urn } } }`),
  },
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
    call: gql(`mutation($u: String!) { runRetentionPolicy(urn: $u, dryRun: false) }`, (_c, f) => ({
      u: f.retentionPolicy,
    })),
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
  {
    operation: "POST /openapi/v3/entity/:entityName",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/openapi/v3/entity/dataset?async=false",
      () => [{ urn: ENTITY, datasetProperties: { value: { description: "matrix" } } }],
    ),
  },
  // DataHub's frontend signing a user in: its system client's credentials, never a token, whatever it may do.
  {
    operation: "POST /auth/generateSessionTokenForUser",
    needs: SYSTEM_CLIENT,
    call: http(
      "POST",
      () => "/auth/generateSessionTokenForUser",
      () => ({ userId: "matrix-session" }),
    ),
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

/** Every operation the gateway serves: the schema's query and mutation fields, the /gms routes, the dashboard's API. */
async function servedOperations(): Promise<string[]> {
  const schema = await servedSchema();
  const fields = ["Query", "Mutation"].flatMap((type) =>
    Object.keys(
      schema.getType(type) ? (schema.getType(type) as unknown as { getFields(): object }).getFields() : {},
    ).map((field) => `${type}.${field}`),
  );
  const routes = describeGmsRoutes().map((r) =>
    r.kind === "action" ? `POST ${r.path}?action=${r.name}` : `${r.kind === "get" ? "GET" : "POST"} ${r.path}`,
  );
  // The session route is DataHub's frontend's, not in the OpenAPI document the routes above are described by.
  return [...fields, ...routes, "GET /admin/queues/api/queues", "POST /auth/generateSessionTokenForUser"].sort();
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
function allowed(kind: Kind, needs: Privilege | null | typeof SYSTEM_CLIENT): boolean {
  if (needs === null) return true;
  if (needs === SYSTEM_CLIENT) return false;
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

/** Who owns the objects the seventh principal acts on: it holds everything their work could use. */
const OWNER = "urn:li:corpuser:matrix-owner";
const OWNER_HOLDS: Privilege[] = [
  "GENERATE_PERSONAL_ACCESS_TOKENS",
  "MANAGE_TESTS",
  "EDIT_ENTITY_TAGS",
  "EDIT_ENTITY_OWNERS",
  "MANAGE_SYSTEM_OPERATIONS",
  "MANAGE_SERVICE_ACCOUNTS",
];
const TAG = "urn:li:tag:matrix-owner-action";
/** A test that passes on a described dataset, and then tags it: what its owner may write, and the caller may not. */
const TAGGING = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
  actions: { passing: [{ type: "ADD_TAGS", values: [TAG] }] },
});

interface Token {
  id: string;
  token: string;
}
/** One call of the seventh principal: its caller holds `holds` only, through its own one-day token. */
interface OthersContext {
  h: Harness;
  caller: Caller & { token: Token };
  owner: Caller;
  ownerToken: Token;
  /** a GraphQL call; the outcome, the error's message, the data */
  gql(
    query: string,
    variables: Record<string, unknown>,
    headers: Record<string, string>,
  ): Promise<{ outcome: Outcome | "BAD_REQUEST"; detail: string; data: Record<string, unknown> | null | undefined }>;
  /** a test of OWNER's (no evaluation on change unless asked), set through its token (or `headers`): its urn */
  ownersTest(input?: Record<string, unknown>, headers?: Record<string, string>): Promise<string>;
  /** a new described dataset (no tags) */
  freshEntity(): Promise<string>;
  /** the tags written on an entity */
  tagsOf(urn: string): Promise<string[]>;
}
interface OthersRow {
  /** as in ROWS */
  operation: string;
  use: string;
  /** the caller's only privileges */
  holds: Privilege[];
  run(c: OthersContext): Promise<void>;
}

const ROTATE = `mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`;
const UPDATE_TEST = `mutation($u: String!, $i: UpdateTestInput!) { updateTest(urn: $u, input: $i) }`;
const testOf = (h: Harness, urn: string) => h.prisma.metadataTest.findUniqueOrThrow({ where: { urn } });

/** What the caller's successor token looks like: minted by it, under its token, expiring no later. */
async function expectBoundedByCaller(c: OthersContext, tokenId: string): Promise<void> {
  const [minted, callers] = await Promise.all([
    c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: tokenId } }),
    c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: c.caller.token.id } }),
  ]);
  expect({ minter: minted.ownerUrn, parent: minted.parentTokenId }).toEqual({
    minter: c.caller.urn,
    parent: c.caller.token.id,
  });
  expect(minted.expiresAt!.getTime()).toBeLessThanOrEqual(callers.expiresAt!.getTime());
}

/** A push of OWNER's tagging test by the caller: the results pushed, the tag (the owner's authority) not written. */
async function expectPushWithoutOwnersAuthority(c: OthersContext, entity: string, test: string): Promise<void> {
  const results = await c.h.prisma.aspect.findFirst({
    where: { urn: entity, aspectName: "testResults" },
    orderBy: { version: "desc" },
  });
  expect(JSON.stringify(results?.value ?? null)).toContain(test);
  expect(await c.tagsOf(entity)).toEqual([]);
}

/**
 * The seventh principal: every operation that takes the id of an object (a token, a test, a policy, a task, a
 * subscription, a user's or an entity's urn), called on one another user owns. Each row says what must hold.
 */
const ACTS_ON_OTHERS: OthersRow[] = [
  // Tokens
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's token that would outlive the caller's",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const theirs = await createToken(c.h, `${c.caller.urn}-rotated`, systemClientHeaders(ROOT), {
        duration: "ONE_WEEK",
      });
      const res = await c.gql(ROTATE, { t: theirs.id }, c.caller.headers);
      const callers = await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: c.caller.token.id } });
      expect(res.outcome).toBe("BAD_REQUEST");
      expect(res.detail).toContain(callers.expiresAt!.toISOString());
    },
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const user = `${c.caller.urn}-rotated`;
      const theirs = await createToken(c.h, user, systemClientHeaders(ROOT), { duration: "ONE_HOUR" });
      const res = await c.gql(
        `mutation($t: String!) { rotateAccessToken(tokenId: $t) { accessToken metadata { id } } }`,
        { t: theirs.id },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const successor = res.data!.rotateAccessToken as { accessToken: string; metadata: { id: string } };
      await expectBoundedByCaller(c, successor.metadata.id);
      // What its user is granted later reaches it only within what the caller holds; it goes with the caller's token.
      await grant(c.h, user, ["MANAGE_POLICIES"]);
      const policies = await c.gql(`{ listPolicies(input: {}) { total } }`, {}, bearer(successor.accessToken));
      expect(policies.outcome).toBe("FORBIDDEN");
      await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: c.caller.token.id },
        c.caller.headers,
      );
      const me = await c.gql(`{ me { urn } }`, {}, bearer(successor.accessToken));
      expect(me.outcome).toBe("UNAUTHENTICATED");
    },
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another token of the caller's own",
    holds: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
    async run(c) {
      const other = await createToken(c.h, c.caller.urn, systemClientHeaders(ROOT), { duration: "ONE_HOUR" });
      const res = await c.gql(ROTATE, { t: other.id }, c.caller.headers);
      expect(res.detail).toBe("ok");
      await expectBoundedByCaller(c, (res.data!.rotateAccessToken as { metadata: { id: string } }).metadata.id);
    },
  },
  ...(
    [
      ["MANAGE_ACCESS_TOKENS", false],
      ["MANAGE_SERVICE_ACCOUNTS", true],
    ] as const
  ).map(([holds, may]): OthersRow => ({
    operation: "Mutation.rotateAccessToken",
    use: `a service account's token, holding ${holds}`,
    holds: [holds],
    async run(c) {
      const root = systemClientHeaders(ROOT);
      const created = await c.gql(`mutation { createServiceAccount(input: {}) { urn } }`, {}, root);
      const account = (created.data!.createServiceAccount as { urn: string }).urn;
      const theirs = await createToken(c.h, account, root, { type: "SERVICE_ACCOUNT", duration: "ONE_HOUR" });
      const res = await c.gql(ROTATE, { t: theirs.id }, c.caller.headers);
      if (!may) {
        expect(res.outcome).toBe("FORBIDDEN");
        return;
      }
      expect(res.detail).toBe("ok");
      await expectBoundedByCaller(c, (res.data!.rotateAccessToken as { metadata: { id: string } }).metadata.id);
    },
  })),
  {
    operation: "Mutation.createAccessToken",
    use: "for a user who holds more than the caller",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(CREATE, { i: tokenInput(OWNER) }, c.caller.headers);
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      // OWNER set a scheduled test through the token: revoking it stops that work, visibly.
      const owners = await createToken(c.h, OWNER);
      const test = await c.ownersTest({ schedule: { cron: "0 3 * * *" } }, bearer(owners.token));
      const res = await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: owners.id },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const row = await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: owners.id } });
      expect(row.revokedBy).toBe(c.caller.urn);
      expect((await testOf(c.h, test)).suspendedAt).not.toBeNull();
    },
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of another user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const user = "urn:li:corpuser:matrix-others-revoked";
      const token = await createToken(c.h, user);
      const res = await c.gql(
        `mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`,
        { u: user },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: token.id } })).revokedBy).toBe(
        c.caller.urn,
      );
    },
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "a token of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const roots = await createToken(c.h, ROOT);
      const res = await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: roots.id },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: roots.id } })).revokedAt).toBeNull();
    },
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const roots = await createToken(c.h, ROOT);
      const res = await c.gql(
        `mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`,
        { u: ROOT },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: roots.id } })).revokedAt).toBeNull();
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: ROOT },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of the system actor",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: "urn:li:corpuser:__datahub_system" },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of a user who minted another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      // A manager mints a user a token (through the system client, so no token of the manager's is its parent), with
      // which the user sets up a scheduled test: the user's work, not the manager's.
      const manager = "urn:li:corpuser:matrix-others-manager";
      const user = `${c.caller.urn}-minted-for`;
      await grant(c.h, manager, ["MANAGE_ACCESS_TOKENS", "MANAGE_TESTS"]);
      await grant(c.h, user, ["MANAGE_TESTS"]);
      const minted = await createToken(c.h, user, systemClientHeaders(manager));
      const test = await c.ownersTest({ schedule: { cron: "0 3 * * *" } }, bearer(minted.token));
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: manager },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).suspendedAt).toBeNull();
    },
  },
  // Tests
  {
    operation: "Mutation.createTest",
    use: "with the id of another user's test",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        { i: { ...testInput(), id: test.slice("urn:li:test:".length) } },
        c.caller.headers,
      );
      expect(res.detail).not.toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(OWNER);
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "another user's definition",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: DEFINITION.replace("description", "name") } } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const row = await testOf(c.h, test);
      expect({ owner: row.ownerUrn, via: row.ownerTokenId }).toEqual({ owner: c.caller.urn, via: c.caller.token.id });
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "activating another user's test whose actions the caller may not write",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, state: "INACTIVE" });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, state: "ACTIVE" } },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      const row = await testOf(c.h, test);
      expect({ state: row.state, owner: row.ownerUrn }).toEqual({ state: "INACTIVE", owner: OWNER });
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "activating another user's test",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, state: "INACTIVE" });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, state: "ACTIVE" } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "turning on another user's evaluation on change",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, evaluateOnChange: true } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.resumeTestSchedule",
    use: "another user's suspended schedule",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, schedule: { cron: "0 3 * * *" } });
      await c.h.prisma.metadataTest.update({
        where: { urn: test },
        data: { suspendedAt: new Date(), suspendedReason: "matrix" },
      });
      const res = await c.gql(`mutation($u: String!) { resumeTestSchedule(urn: $u) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.runTest",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.gql(`mutation($u: String!) { runTest(urn: $u, push: true) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      const taskId = res.data!.runTest as string;
      const task = await eventually(
        "the run completes",
        () => c.h.prisma.task.findFirstOrThrow({ where: { id: taskId.split(":").at(-1) } }),
        { until: (row) => row.state === "completed" },
      );
      expect(task.createdBy).toBe(c.caller.urn);
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "Mutation.runTests",
    use: "an entity another user's test selects",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.gql(`mutation($u: String!) { runTests(urn: $u) }`, { u: entity }, c.caller.headers);
      expect(res.detail).toBe("ok");
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "Mutation.runTestDefinition",
    use: "an entity, with actions the caller may not write",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const entity = await c.freshEntity();
      const res = await c.gql(
        `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t) { status } }`,
        { u: entity, t: { json: TAGGING } },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect(await c.tagsOf(entity)).toEqual([]);
    },
  },
  {
    operation: "Mutation.deleteTest",
    use: "another user's test",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(`mutation($u: String!) { deleteTest(urn: $u) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      expect(await c.h.prisma.metadataTest.count({ where: { urn: test } })).toBe(0);
    },
  },
  {
    operation: "POST /test?action=evaluate",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.h.post(
        "/gms/test?action=evaluate",
        { urn: entity, testUrns: [test], push: true },
        c.caller.headers,
      );
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body.value)).toContain('"missingPrivilege":"EDIT_ENTITY_TAGS"');
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "POST /test?action=batchEvaluate",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.h.post(
        "/gms/test?action=batchEvaluate",
        { urns: [entity], testUrns: [test], push: true },
        c.caller.headers,
      );
      expect(res.status).toBe(200);
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
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

/** A retention policy of OWNER's, set through its token. */
async function ownersRetentionPolicy(c: OthersContext): Promise<string> {
  const res = await c.gql(
    `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "datasetProfile", retainDays: 9, cron: "0 0 1 1 *"}) { urn } }`,
    {},
    bearer(c.ownerToken.token),
  );
  if (!res.data?.createRetentionPolicy) throw new Error(res.detail);
  return (res.data.createRetentionPolicy as { urn: string }).urn;
}

/** The fields of an HTTP action's documented request body (docs/api/openapi.json, which api-docs tests keep served). */
function requestFieldsOf(route: string, action: string): string[] {
  const doc = JSON.parse(readFileSync(path.join(__dirname, "../../../docs/api/openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
    components: { schemas: Record<string, Schema> };
  };
  type Schema = { $ref?: string; properties?: Record<string, unknown>; oneOf?: Schema[] };
  const resolve = (schema: Schema): Schema =>
    schema.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").at(-1)!]!) : schema;
  const schema = doc.paths[`${route}?action=${action}`]?.post?.requestBody?.content["application/json"]?.schema;
  if (!schema) return [];
  const resolved = resolve(schema);
  return [resolved, ...(resolved.oneOf ?? []).map(resolve)].flatMap((s) => Object.keys(s.properties ?? {}));
}

/** The names an argument or input field takes when it names an object: a token, test, task, user, entity... */
const OBJECT_ID = /^(id|urn|urns|tokenId|taskId|testUrn|testUrns|subscriptionId|actorUrn|groupUrn|entityUrn|ownerUrn)$/;

/**
 * Every mutation and HTTP write action that takes an object's id: a mutation whose arguments, or its input's fields,
 * have an OBJECT_ID name; an HTTP action (not a read: get*, list*) whose documented body has one.
 */
async function objectIdOperations(): Promise<string[]> {
  const schema = await servedSchema();
  const mutation = schema.getMutationType();
  const names = (field: { args: ReadonlyArray<{ name: string; type: unknown }> }) =>
    field.args.flatMap((arg) => {
      const type = getNamedType(arg.type as never);
      return [arg.name, ...(isInputObjectType(type) ? Object.keys(type.getFields()) : [])];
    });
  const mutations = Object.values(mutation?.getFields() ?? {})
    .filter((field) => names(field).some((n) => OBJECT_ID.test(n)))
    .map((field) => `Mutation.${field.name}`);
  const actions = describeGmsRoutes()
    .filter((r) => r.kind === "action" && !/^(get|list)/.test(r.name))
    .filter((r) => r.kind === "action" && requestFieldsOf(r.path, r.name).some((n) => OBJECT_ID.test(n)))
    .map((r) => (r.kind === "action" ? `POST ${r.path}?action=${r.name}` : ""));
  return [...new Set([...mutations, ...actions])].sort();
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
    // One caller holding nothing per kind: rows that need nothing still write (subscriptions, budgeted per actor).
    const key = kind === "holding no privilege" || p === null ? `${kind}/nothing` : `${kind}/${p}`;
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
      const caller = await callerFor(kind, row.needs === SYSTEM_CLIENT ? null : row.needs);
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

  describe("a caller acting on an object another user owns", () => {
    let ownerToken: Token;
    let entities = 0;
    const context = async (index: number, row: OthersRow): Promise<OthersContext> => {
      ownerToken ??= await (async () => {
        await grantPolicy(OWNER, OWNER_HOLDS);
        return createToken(h, OWNER);
      })();
      const urn = `urn:li:corpuser:matrix-acts-${index}`;
      if (row.holds.length > 0) await grantPolicy(urn, row.holds);
      const token = await createToken(h, urn);
      const gql: OthersContext["gql"] = async (query, variables, headers) => {
        const res = await h.graphql(query, variables, headers);
        const error = res.body.errors?.[0];
        const code = error?.extensions?.code;
        const outcome = !error
          ? "ok"
          : code === "FORBIDDEN" || code === "UNAUTHENTICATED"
            ? code
            : code === "BAD_USER_INPUT"
              ? "BAD_REQUEST"
              : "other";
        return { outcome, detail: error ? `${code}: ${error.message}` : "ok", data: res.body.data };
      };
      return {
        h,
        caller: { urn, headers: bearer(token.token), token },
        owner: { urn: OWNER, headers: bearer(ownerToken.token) },
        ownerToken,
        gql,
        async ownersTest(input = {}, headers = bearer(ownerToken.token)) {
          const res = await gql(
            `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
            { i: { ...testInput(), evaluateOnChange: false, ...input } },
            headers,
          );
          if (!res.data?.createTest) throw new Error(res.detail);
          return res.data.createTest as string;
        },
        async freshEntity() {
          const entity = `urn:li:dataset:(urn:li:dataPlatform:hive,db.acted_on_${index}_${++entities},PROD)`;
          const ingested = await h.post("/gms/aspects?action=ingestProposal", {
            proposal: {
              entityType: "dataset",
              entityUrn: entity,
              aspectName: "datasetProperties",
              changeType: "UPSERT",
              aspect: { contentType: "application/json", value: JSON.stringify({ description: "acted on" }) },
            },
          });
          expect(ingested.status).toBe(200);
          return entity;
        },
        async tagsOf(entity) {
          const row = await h.prisma.aspect.findFirst({
            where: { urn: entity, aspectName: "globalTags" },
            orderBy: { version: "desc" },
          });
          return ((row?.value as { tags?: Array<{ tag: string }> } | undefined)?.tags ?? []).map((t) => t.tag);
        },
      };
    };

    it("has a row for every mutation and HTTP action that takes an object's id", async () => {
      const rows = [...new Set(ACTS_ON_OTHERS.map((r) => r.operation))].sort();
      const operations = await objectIdOperations();
      expect({
        missing: operations.filter((o) => !rows.includes(o)),
        unknown: rows.filter((o) => !operations.includes(o)),
      }).toEqual({ missing: [], unknown: [] });
    });

    it.each(ACTS_ON_OTHERS.map((r, index) => [`${r.operation} (${r.use})`, index, r] as const))(
      "%s",
      async (_name, index, row) => {
        await row.run(await context(index, row));
      },
    );
  });

  it("suspends, at its next firing, the scheduled work of every owner who lost what it needs", async () => {
    const owners = [...callers.entries()].filter(
      ([key]) => key.startsWith("the owner of scheduled work") && !key.endsWith("/nothing"),
    );
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
