/** The operations authorization-matrix.int.spec.ts calls, the callers it calls them as, and what each caller may do. */

export const NOBODY = "urn:li:corpuser:nobody"; // holds no privilege
export const GENERATOR = "urn:li:corpuser:generator"; // GENERATE_PERSONAL_ACCESS_TOKENS
export const MANAGER = "urn:li:corpuser:manager"; // MANAGE_ACCESS_TOKENS
export const STRANGER = "urn:li:corpuser:stranger"; // owns tokens nobody else here owns
export const TASK_VIEWER = "urn:li:corpuser:task-viewer"; // GET_TASK_STATUS
export const SCOPED_MANAGER = "urn:li:corpuser:scoped-manager"; // MANAGE_ACCESS_TOKENS, calling with a token scoped narrower
export const ALMIGHTY = "urn:li:corpuser:almighty"; // every privilege, calling with a read-only token
export const BULK_TARGET = "urn:li:corpuser:bulk-target"; // has tokens for revokeAccessTokens of another user
export const OPERATOR = "urn:li:corpuser:operator"; // MANAGE_SYSTEM_OPERATIONS, granted in DataHub's spelling
export const TEST_VIEWER = "urn:li:corpuser:test-viewer"; // VIEW_TESTS
export const TEST_MANAGER = "urn:li:corpuser:test-manager"; // MANAGE_TESTS (implies VIEW_TESTS)
export const HISTORY_ENTITY = "urn:li:dataset:(urn:li:dataPlatform:hive,db.matrix,PROD)";
export const SCHEDULED_TEST = "urn:li:test:matrix-scheduled";
export const MATRIX_DEFINITION = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
});

export type Outcome = "ok" | "UNAUTHENTICATED" | "FORBIDDEN";
export interface Operation {
  name: string;
  /** revokes every token of the caller: its credential is renewed afterwards, so the next operation has one */
  revokesCallersTokens?: boolean;
  /** the document and variables, given the caller's urn and the fixtures */
  request: (caller: string, f: Fixtures) => { query: string; variables?: Record<string, unknown> };
}
export interface Fixtures {
  /** revoked by the first caller allowed to */
  strangerTokenId: string;
  /** another of the stranger's tokens, never revoked: a revoked token has no metadata to read */
  strangerToken: string;
  /** a token owned by the manager, acting for the caller */
  tokenActingForCaller: (caller: string) => Promise<{ id: string; token: string }>;
  /** a retention policy every allowed caller updates and dry-runs */
  retentionPolicy: string;
  /** a fresh retention policy for each caller to delete */
  retentionPolicyToDelete: () => string;
}

export const createFor = (actorUrn: string) => ({
  query: `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { metadata { id } } }`,
  variables: { i: { type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "matrix" } },
});
export const listWith = (filters: unknown[]) => ({
  query: `query($f: [FacetFilterInput!]) { listAccessTokens(input: {filters: $f}) { total } }`,
  variables: { f: filters },
});
export const policyInput = { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [NOBODY] } };

export const OPERATIONS: Operation[] = [
  { name: "me", request: () => ({ query: `{ me { urn privileges } }` }) },
  { name: "createAccessToken for self", request: (c) => createFor(c) },
  { name: "createAccessToken for another user", request: () => createFor(STRANGER) },
  { name: "listAccessTokens own (ownerUrn)", request: (c) => listWith([{ field: "ownerUrn", value: c }]) },
  { name: "listAccessTokens own (actorUrn)", request: (c) => listWith([{ field: "actorUrn", value: c }]) },
  { name: "listAccessTokens all", request: () => listWith([]) },
  // DataHub's filters (docs/datahub-clients.md): the expired ones of everyone, and "not mine", are everyone's tokens.
  {
    name: "listAccessTokens expired (DataHub's LESS_THAN on expiresAt)",
    request: () => listWith([{ field: "expiresAt", values: [String(Date.now())], condition: "LESS_THAN" }]),
  },
  {
    name: "listAccessTokens not own (DataHub's negated)",
    request: (c) => listWith([{ field: "ownerUrn", values: [c], negated: true }]),
  },
  {
    name: "getAccessToken for self (DataHub's deprecated query)",
    request: (c) => ({
      query: `query($i: GetAccessTokenInput!) { getAccessToken(input: $i) { accessToken } }`,
      variables: { i: { type: "PERSONAL", actorUrn: c, duration: "ONE_HOUR" } },
    }),
  },
  {
    name: "createAccessToken for self, scoped",
    request: (c) => ({
      ...createFor(c),
      variables: { i: { ...createFor(c).variables.i, scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS"] } },
    }),
  },
  {
    name: "revokeAccessTokens of self",
    revokesCallersTokens: true,
    request: (c) => ({ query: `mutation($a: String!) { revokeAccessTokens(actorUrn: $a) }`, variables: { a: c } }),
  },
  {
    name: "revokeAccessTokens of another user",
    request: () => ({ query: `mutation { revokeAccessTokens(actorUrn: "${BULK_TARGET}") }` }),
  },
  { name: "listAccessTokens of another user", request: () => listWith([{ field: "actorUrn", value: STRANGER }]) },
  {
    name: "revokeAccessToken of a stranger",
    request: (_c, f) => ({ query: `mutation { revokeAccessToken(tokenId: "${f.strangerTokenId}") }` }),
  },
  {
    name: "getAccessTokenMetadata of a stranger's token",
    request: (_c, f) => ({
      query: `query($t: String!) { getAccessTokenMetadata(token: $t) { id } }`,
      variables: { t: f.strangerToken },
    }),
  },
  {
    name: "createPolicy",
    request: () => ({
      query: `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
      variables: { i: policyInput },
    }),
  },
  { name: "listPolicies", request: () => ({ query: `{ listPolicies(input: {}) { total } }` }) },
  { name: "createGroup", request: () => ({ query: `mutation { createGroup(input: {name: "g"}) }` }) },
  { name: "listGroups", request: () => ({ query: `{ listGroups(input: {}) { total } }` }) },
  { name: "listAuditEvents", request: () => ({ query: `{ listAuditEvents(input: {}) { total } }` }) },
  {
    name: "listAuditEvents filtered by action and time",
    request: () => ({ query: `{ listAuditEvents(input: {action: "task.cancel", since: 0}) { total } }` }),
  },
  { name: "listTasks", request: () => ({ query: `{ listTasks(input: {}) { total tasks { createdBy } } }` }) },
  {
    name: "listTasks filtered by state and creator",
    request: (c) => ({
      query: `query($c: String) { listTasks(input: {state: waiting, createdBy: $c}) { total } }`,
      variables: { c },
    }),
  },
  {
    name: "createRetentionPolicy",
    request: () => ({
      query: `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *"}) { urn } }`,
    }),
  },
  { name: "listRetentionPolicies", request: () => ({ query: `{ listRetentionPolicies(input: {}) { total } }` }) },
  {
    name: "retentionPolicy",
    request: (_c, f) => ({
      query: `query($u: String!) { retentionPolicy(urn: $u) { urn } }`,
      variables: { u: f.retentionPolicy },
    }),
  },
  {
    name: "updateRetentionPolicy",
    request: (_c, f) => ({
      query: `mutation($u: String!) { updateRetentionPolicy(urn: $u, input: {retainDays: 31}) { urn } }`,
      variables: { u: f.retentionPolicy },
    }),
  },
  {
    name: "runRetentionPolicy (dry run)",
    request: (_c, f) => ({
      query: `mutation($u: String!) { runRetentionPolicy(urn: $u) }`,
      variables: { u: f.retentionPolicy },
    }),
  },
  {
    name: "deleteRetentionPolicy",
    request: (_c, f) => ({
      query: `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`,
      variables: { u: f.retentionPolicyToDelete() },
    }),
  },
  {
    name: "testResultHistory",
    request: () => ({
      query: `query($u: String!, $t: String!) { testResultHistory(urn: $u, testUrn: $t) { total } }`,
      variables: { u: HISTORY_ENTITY, t: SCHEDULED_TEST },
    }),
  },
  {
    name: "createTest with a schedule",
    request: () => ({
      query: `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
      variables: {
        i: { name: "s", category: "c", definition: { json: MATRIX_DEFINITION }, schedule: { cron: "0 3 * * *" } },
      },
    }),
  },
  {
    name: "updateTest's schedule",
    request: () => ({
      query: `mutation($u: String!, $i: UpdateTestInput!) { updateTest(urn: $u, input: $i) }`,
      variables: {
        u: SCHEDULED_TEST,
        i: { name: "s", category: "c", definition: { json: MATRIX_DEFINITION }, schedule: { cron: "0 4 * * *" } },
      },
    }),
  },
];
export const TASK_READS = ["listTasks", "listTasks filtered by state and creator"];
export const TEST_HISTORY_READS = ["testResultHistory"];
export const TEST_SCHEDULE_WRITES = ["createTest with a schedule", "updateTest's schedule"];
export const RETENTION = [
  "createRetentionPolicy",
  "listRetentionPolicies",
  "retentionPolicy",
  "updateRetentionPolicy",
  "runRetentionPolicy (dry run)",
  "deleteRetentionPolicy",
];
export const AUDIT_READS = ["listAuditEvents", "listAuditEvents filtered by action and time"];

// Per authenticated caller kind, the operations it may perform; every other one is FORBIDDEN.
export const ALLOWED: Record<string, string[]> = {
  "holding no privilege": ["me"],
  "holding GENERATE_PERSONAL_ACCESS_TOKENS": [
    "me",
    "createAccessToken for self",
    "listAccessTokens own (ownerUrn)",
    "listAccessTokens own (actorUrn)",
    "getAccessToken for self (DataHub's deprecated query)",
    "createAccessToken for self, scoped",
    "revokeAccessTokens of self",
  ],
  // A scoped token may use only its scopes of its user's privileges: this one, none of MANAGE_ACCESS_TOKENS's own.
  "holding MANAGE_ACCESS_TOKENS, with a token scoped to GENERATE_PERSONAL_ACCESS_TOKENS": [
    "me",
    "createAccessToken for self",
    "listAccessTokens own (ownerUrn)",
    "listAccessTokens own (actorUrn)",
    "getAccessToken for self (DataHub's deprecated query)",
    "createAccessToken for self, scoped",
    "revokeAccessTokens of self",
  ],
  "holding every privilege, with a token scoped to GET_ENTITY": ["me"],
  "holding MANAGE_ACCESS_TOKENS": OPERATIONS.map((o) => o.name).filter(
    (n) =>
      ![
        ...["createPolicy", "listPolicies", "createGroup", "listGroups"],
        ...AUDIT_READS,
        ...TASK_READS,
        ...RETENTION,
        ...TEST_HISTORY_READS,
        ...TEST_SCHEDULE_WRITES,
      ].includes(n),
  ),
  "holding GET_TASK_STATUS": ["me", ...TASK_READS],
  "holding VIEW_TESTS": ["me", ...TEST_HISTORY_READS],
  "holding MANAGE_TESTS": ["me", ...TEST_HISTORY_READS, ...TEST_SCHEDULE_WRITES],
  // MANAGE_SYSTEM_OPERATIONS implies GET_TASK_STATUS
  "holding MANAGE_SYSTEM_OPERATIONS": ["me", ...TASK_READS, ...RETENTION],
  "root (system client)": OPERATIONS.map((o) => o.name),
  "root (system client as DataHub sends it: Basic id:secret, X-DataHub-Actor)": OPERATIONS.map((o) => o.name),
};
