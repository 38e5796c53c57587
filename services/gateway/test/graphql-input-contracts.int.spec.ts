/**
 * GraphQL inputs are parsed by each operation's zod contract (src/shared/validate.ts, `parseArgs`) after its privilege
 * check: a refusal is BAD_USER_INPUT in the words the hand checks before it used, naming the field; a caller without
 * the privilege hears its 403 whatever it sent. Checks that no other test exercises are here.
 */
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const NOBODY = "urn:li:corpuser:nobody-zodin";
const LONG_ID = "x".repeat(257);

/** [operation, document, variables, the message, the details (when checked)] */
type Refusal = [string, string, Record<string, unknown>, string, Record<string, unknown>?];
const REFUSALS: Refusal[] = [
  [
    "createAccessToken of a service account",
    `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
    { i: { type: "SERVICE_ACCOUNT", actorUrn: ROOT, duration: "ONE_HOUR", name: "n" } },
    "input.actorUrn urn:li:corpuser:admin is not a service account: SERVICE_ACCOUNT tokens are for the accounts " +
      "createServiceAccount makes (urn:li:corpuser:service_<uuid>)",
  ],
  [
    "createAccessToken without a name",
    `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken } }`,
    { i: { type: "PERSONAL", actorUrn: ROOT, duration: "ONE_HOUR" } },
    "input.name is required: a name for the token",
  ],
  [
    "previewTestImpact of a sample past the limit",
    `query($j: String!) { previewTestImpact(urn: "urn:li:test:t", definition: {json: $j}, sampleSize: 0) { sampled } }`,
    { j: JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } }) },
    "sampleSize must be a whole number from 1 to 5000",
  ],
  [
    "testRunDiff of a run id past the limit",
    `query($r: String) { testRunDiff(testUrn: "urn:li:test:t", runId: $r) { runId } }`,
    { r: LONG_ID },
    "runId must be 1 to 256 characters long",
  ],
  [
    "revokeAccessToken of an id past the limit",
    `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
    { t: LONG_ID },
    "tokenId is longer than the limit of 256 characters",
    { field: "tokenId", limit: 256 },
  ],
  [
    "listAccessTokens with a negative start",
    `{ listAccessTokens(input: {start: -1}) { total } }`,
    {},
    "input.start must be 0 or more",
  ],
  [
    "createPolicy with an unknown privilege",
    `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
    { i: { name: "p", state: "ACTIVE", privileges: ["GET_ENTITY", "FLY"], actors: {} } },
    "input.privileges has unknown privileges FLY; known: ",
  ],
  [
    "createPolicy naming a group with a user urn",
    `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
    { i: { name: "p", state: "ACTIVE", privileges: [], actors: { groups: ["urn:li:corpGroup:a", ROOT] } } },
    `Invalid urn in 'input.actors.groups[1]': '${ROOT}' is not a corpGroup urn`,
    { field: "input.actors.groups[1]", value: ROOT },
  ],
  [
    "addGroupMembers of nobody",
    `mutation { addGroupMembers(input: {groupUrn: "urn:li:corpGroup:g", userUrns: []}) }`,
    {},
    "input.userUrns must name at least one user",
  ],
  [
    "createGroup with a blank name",
    `mutation { createGroup(input: {name: "  "}) }`,
    {},
    "input.name must be 1 to 256 characters long",
  ],
  [
    "testResultHistory from a negative start",
    `{ testResultHistory(urn: "urn:li:corpuser:a", testUrn: "urn:li:test:t", start: -1) { total } }`,
    {},
    "start must be 0 or more",
  ],
  [
    "runTest in batches of 0",
    `mutation { runTest(urn: "urn:li:test:t", batchSize: 0) }`,
    {},
    "batchSize must be a whole number from 1 to 10000",
  ],
  [
    "delegatedWork of neither a user nor a token",
    `{ delegatedWork(input: {}) { urn } }`,
    {},
    "input: give ownerUrn, tokenId or both (the work of that user, or set through that token)",
  ],
  [
    "revokeActorAccess with a reason past the limit",
    `mutation($i: RevokeActorAccessInput!) { revokeActorAccess(input: $i) { revokedTokenIds } }`,
    { i: { actorUrn: NOBODY, reason: "r".repeat(257) } },
    "input.reason must be at most 256 characters long",
  ],
];

describe("GraphQL input contracts", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  it.each(REFUSALS)(
    "refuse %s naming the field, in the hand checks' words",
    // A rest parameter: jest would pass a `done` callback to a fifth parameter of a row of four.
    async (...[, query, vars, message, details]: Refusal) => {
      const res = await h.graphql(query, vars, systemClientHeaders(ROOT));
      const error = res.body.errors?.[0] as { message: string; extensions?: Record<string, unknown> } | undefined;
      expect(error?.extensions?.code).toBe("BAD_USER_INPUT");
      expect(error?.message.startsWith(message)).toBe(true);
      if (details) expect(error?.extensions?.details).toEqual(details);
    },
  );

  it.each(REFUSALS)("answer %s with FORBIDDEN to a caller without the privilege", async (_what, query, vars) => {
    const res = await h.graphql(query, vars, systemClientHeaders(NOBODY));
    expect(res.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
  });
});
