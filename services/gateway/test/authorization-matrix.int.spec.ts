/**
 * Every token, policy, group, retention and scheduled-test operation against every kind of caller, over real HTTP with
 * real tokens (the operations and callers in support/authorization-matrix-operations.ts). Expected outcomes are "ok" or
 * the GraphQL error code the caller gets.
 */
import {
  ROOT,
  bearer,
  createToken,
  grant,
  mintToken,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { PRIVILEGES } from "../src/policies/privileges";
import {
  NOBODY,
  GENERATOR,
  MANAGER,
  STRANGER,
  TASK_VIEWER,
  SCOPED_MANAGER,
  ALMIGHTY,
  BULK_TARGET,
  OPERATOR,
  TEST_VIEWER,
  TEST_MANAGER,
  HISTORY_ENTITY,
  MATRIX_DEFINITION,
  Outcome,
  Operation,
  Fixtures,
  createFor,
  OPERATIONS,
  ALLOWED,
} from "./support/authorization-matrix-operations";

describe("authorization matrix", () => {
  let h: Harness;
  let fixtures: Fixtures;
  const callers: Record<
    string,
    { urn: string; headers: Record<string, string>; renew?: () => Promise<Record<string, string>> }
  > = {};
  const unauthenticated: Record<string, { headers: Record<string, string>; outcome: Outcome; message: string }> = {};

  beforeAll(async () => {
    // Root creates a retention policy for every call of the matrix: far past the per-user schedule cap.
    h = await startGateway({ MAX_SCHEDULES_PER_USER: "10000" });
    await grant(h, GENERATOR, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    await grant(h, MANAGER, ["MANAGE_ACCESS_TOKENS"]);
    await grant(h, STRANGER, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    await grant(h, TASK_VIEWER, ["GET_TASK_STATUS"]);
    await grant(h, SCOPED_MANAGER, ["MANAGE_ACCESS_TOKENS"]);
    for (const privilege of PRIVILEGES) await grant(h, ALMIGHTY, [privilege]);
    await createToken(h, BULK_TARGET);
    await grant(h, OPERATOR, ["MANAGE_SYSTEM_OPERATIONS_PRIVILEGE"]); // DataHub's spelling
    await grant(h, TEST_VIEWER, ["VIEW_TESTS"]);
    await grant(h, TEST_MANAGER, ["MANAGE_TESTS"]);
    // testResultHistory answers for an entity that exists; updateTest's schedule changes a test that exists.
    const ingested = await h.post("/gms/aspects?action=ingestProposalBatch", {
      proposals: [
        {
          entityType: "dataset",
          entityUrn: HISTORY_ENTITY,
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
        },
      ],
    });
    expect(ingested.status).toBe(200);
    const created = await h.graphql(
      `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
      { i: { id: "matrix-scheduled", name: "s", category: "c", definition: { json: MATRIX_DEFINITION } } },
      systemClientHeaders(ROOT),
    );
    expect(created.body.errors).toBeUndefined();
    const [toRevoke, toRead] = [await createToken(h, STRANGER), await createToken(h, STRANGER)];
    const createPolicy = async () => {
      const res = await h.graphql(
        `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "operation", retainDays: 9, cron: "0 0 1 1 *"}) { urn } }`,
        {},
        systemClientHeaders(ROOT),
      );
      return (res.body.data as { createRetentionPolicy: { urn: string } }).createRetentionPolicy.urn;
    };
    // One for each call of the matrix (every caller kind, refused ones too): each allowed caller deletes its own.
    const toDelete: string[] = [];
    for (let i = 0; i < 20; i++) toDelete.push(await createPolicy());
    fixtures = {
      strangerTokenId: toRevoke.id,
      strangerToken: toRead.token,
      tokenActingForCaller: (caller) => createToken(h, caller, callers["holding MANAGE_ACCESS_TOKENS"]!.headers),
      retentionPolicy: await createPolicy(),
      retentionPolicyToDelete: () => toDelete.pop()!,
    };
    for (const [kind, urn, scopes] of [
      ["holding no privilege", NOBODY],
      ["holding GENERATE_PERSONAL_ACCESS_TOKENS", GENERATOR],
      ["holding MANAGE_ACCESS_TOKENS", MANAGER],
      ["holding GET_TASK_STATUS", TASK_VIEWER],
      ["holding MANAGE_SYSTEM_OPERATIONS", OPERATOR],
      ["holding VIEW_TESTS", TEST_VIEWER],
      ["holding MANAGE_TESTS", TEST_MANAGER],
      [
        "holding MANAGE_ACCESS_TOKENS, with a token scoped to GENERATE_PERSONAL_ACCESS_TOKENS",
        SCOPED_MANAGER,
        ["GENERATE_PERSONAL_ACCESS_TOKENS"],
      ],
      ["holding every privilege, with a token scoped to GET_ENTITY", ALMIGHTY, ["GET_ENTITY"]],
    ] as const) {
      const renew = async () =>
        bearer((await createToken(h, urn, systemClientHeaders(ROOT), scopes ? { scopes } : {})).token);
      callers[kind] = { urn, headers: await renew(), renew };
    }
    callers["root (system client)"] = { urn: ROOT, headers: systemClientHeaders(ROOT) };
    callers["root (system client as DataHub sends it: Basic id:secret, X-DataHub-Actor)"] = {
      urn: ROOT,
      headers: {
        authorization: `Basic ${h.config.SYSTEM_CLIENT_ID}:${h.config.SYSTEM_CLIENT_SECRET}`,
        "x-datahub-actor": ROOT,
      },
    };

    const revoked = await createToken(h, GENERATOR);
    await h.graphql(`mutation { revokeAccessToken(tokenId: "${revoked.id}") }`, {}, systemClientHeaders(ROOT));
    const expired = await mintToken(h, GENERATOR, Math.floor(Date.now() / 1000) - 60);
    const generatorToken = callers["holding GENERATE_PERSONAL_ACCESS_TOKENS"]!.headers;
    Object.assign(unauthenticated, {
      "no credentials": {
        headers: {},
        outcome: "UNAUTHENTICATED",
        message: "Request is missing 'Authorization' header.",
      },
      "a garbage token": {
        headers: bearer("garbage"),
        outcome: "UNAUTHENTICATED",
        message: "Unable to verify the provided token.",
      },
      "an expired token": { headers: bearer(expired), outcome: "UNAUTHENTICATED", message: "Token has expired." },
      "a revoked token": {
        headers: bearer(revoked.token),
        outcome: "UNAUTHENTICATED",
        message: "Token has been revoked",
      },
      "an actor header contradicting the token": {
        headers: { ...generatorToken, "x-platform-actor": MANAGER },
        outcome: "FORBIDDEN",
        message: "x-platform-actor 'urn:li:corpuser:manager' does not match the actor of the access token",
      },
      "DataHub's actor header contradicting the token": {
        headers: { ...generatorToken, "x-datahub-actor": MANAGER },
        outcome: "FORBIDDEN",
        message: "x-datahub-actor 'urn:li:corpuser:manager' does not match the actor of the access token",
      },
      "DataHub's actor header alone (auth enabled)": {
        headers: { "x-datahub-actor": ROOT },
        outcome: "UNAUTHENTICATED",
        message: "Request is missing 'Authorization' header.",
      },
      "DataHub's Basic form with a wrong secret": {
        headers: { authorization: `Basic ${h.config.SYSTEM_CLIENT_ID}:wrong`, "x-datahub-actor": ROOT },
        outcome: "UNAUTHENTICATED",
        message: "Invalid system client credentials.",
      },
      "the actor header alone (auth enabled)": {
        headers: { "x-platform-actor": ROOT },
        outcome: "UNAUTHENTICATED",
        message: "Request is missing 'Authorization' header.",
      },
    });
  });
  afterAll(() => h.close());

  async function outcomeOf(op: Operation, caller: string, headers: Record<string, string>) {
    const { query, variables } = op.request(caller, fixtures);
    const res = await h.graphql(query, variables, headers);
    const error = res.body.errors?.[0];
    return { outcome: error ? (error.extensions?.code as Outcome) : "ok", message: error?.message, status: res.status };
  }

  describe.each([
    "no credentials",
    "a garbage token",
    "an expired token",
    "a revoked token",
    "an actor header contradicting the token",
    "DataHub's actor header contradicting the token",
    "DataHub's actor header alone (auth enabled)",
    "DataHub's Basic form with a wrong secret",
    "the actor header alone (auth enabled)",
  ])("a caller with %s", (kind) => {
    it.each(OPERATIONS.map((o) => [o.name, o] as const))("is refused %s with the reason", async (_name, op) => {
      const caller = unauthenticated[kind]!;
      const result = await outcomeOf(op, GENERATOR, caller.headers);
      expect(result).toEqual({
        outcome: caller.outcome,
        message: caller.message,
        status: caller.outcome === "FORBIDDEN" ? 403 : 401,
      });
    });
  });

  describe.each(Object.keys(ALLOWED))("a caller %s", (kind) => {
    it.each(OPERATIONS.map((o) => [o.name, o] as const))("%s", async (name, op) => {
      const caller = callers[kind]!;
      const expected: Outcome = ALLOWED[kind]!.includes(name) ? "ok" : "FORBIDDEN";
      const result = await outcomeOf(op, caller.urn, caller.headers);
      if (op.revokesCallersTokens && result.outcome === "ok" && caller.renew) caller.headers = await caller.renew();
      expect(result.outcome).toBe(expected);
      if (expected === "FORBIDDEN") expect(result.message).toContain(`${caller.urn} is unauthorized to`);
    });
  });

  describe("DataHub's spellings over HTTP need the same privileges", () => {
    it.each([
      [
        "truncateTimeseriesAspect of a lower-case aspect",
        "truncateTimeseriesAspect",
        { entityType: "dataset", aspect: "datasetusagestatistics", endTimeMillis: 1 },
      ],
      [
        "truncateTimeseriesAspect with forceDeleteByQuery",
        "truncateTimeseriesAspect",
        { entityType: "query", aspect: "queryusagestatistics", endTimeMillis: 1, forceDeleteByQuery: true },
      ],
      ["getEsTaskStatus", "getEsTaskStatus", { task: "00000000-0000-4000-8000-000000000000" }],
    ])("%s: 403 without the privilege, answered for root", async (_what, action, body) => {
      const refused = await h.post(
        `/gms/operations?action=${action}`,
        body,
        callers["holding MANAGE_ACCESS_TOKENS"]!.headers,
      );
      expect(refused.status).toBe(403);
      const dataHubRoot =
        callers["root (system client as DataHub sends it: Basic id:secret, X-DataHub-Actor)"]!.headers;
      const answered = await h.post(`/gms/operations?action=${action}`, body, dataHubRoot);
      expect(answered.status).toBe(action === "getEsTaskStatus" ? 404 : 200);
    });
  });

  describe("creating a token for another user: never more power than the minter's", () => {
    const POLICY_ADMIN = "urn:li:corpuser:policy-admin"; // MANAGE_POLICIES, which the manager lacks
    beforeAll(() => grant(h, POLICY_ADMIN, ["MANAGE_POLICIES"]));

    it("a MANAGE_ACCESS_TOKENS holder is refused one for the root user: only the root user mints its own", async () => {
      const res = await h.graphql(
        createFor(ROOT).query,
        createFor(ROOT).variables,
        callers["holding MANAGE_ACCESS_TOKENS"]!.headers,
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: `${MANAGER} is unauthorized to generate access tokens for ${ROOT}, the root user: only the root user mints its own tokens.`,
        extensions: { code: "FORBIDDEN" },
      });
    });

    it.each([["a user holding a privilege the manager lacks", POLICY_ADMIN]])(
      "a MANAGE_ACCESS_TOKENS holder is refused one for %s, without being told which privileges",
      async (_w, urn) => {
        const res = await h.graphql(
          createFor(urn).query,
          createFor(urn).variables,
          callers["holding MANAGE_ACCESS_TOKENS"]!.headers,
        );
        expect(res.body.errors?.[0]).toMatchObject({
          message: `${MANAGER} is unauthorized to generate access tokens for ${urn}: it holds privileges you do not.`,
          extensions: { code: "FORBIDDEN" },
        });
        expect(await h.prisma.accessToken.count({ where: { actorUrn: urn, ownerUrn: MANAGER } })).toBe(0);
      },
    );

    it.each([
      ["holding no privilege", NOBODY],
      ["holding a privilege the manager's implies", GENERATOR],
      ["holding the manager's own privilege", MANAGER],
    ])("a MANAGE_ACCESS_TOKENS holder may create one for a user %s", async (_w, urn) => {
      const headers = callers["holding MANAGE_ACCESS_TOKENS"]!.headers;
      const res = await h.graphql(createFor(urn).query, createFor(urn).variables, headers);
      expect(res.body.errors).toBeUndefined();
    });

    it("the system client acting for a token manager is refused one for the root user: it mints as the manager", async () => {
      const res = await h.graphql(createFor(ROOT).query, createFor(ROOT).variables, systemClientHeaders(MANAGER));
      expect(res.body.errors?.[0]).toMatchObject({
        message: `${MANAGER} is unauthorized to generate access tokens for ${ROOT}, the root user: only the root user mints its own tokens.`,
        extensions: { code: "FORBIDDEN" },
      });
    });
  });

  describe("revoking a token: owner, actor, stranger", () => {
    it("gives a caller without MANAGE_ACCESS_TOKENS the same refusal for an unknown id as for another's token", async () => {
      const headers = callers["holding GENERATE_PERSONAL_ACCESS_TOKENS"]!.headers;
      const others = await createToken(h, STRANGER);
      const messages = [];
      for (const tokenId of [others.id, "00000000-0000-4000-8000-000000000000"]) {
        const res = await h.graphql(`mutation { revokeAccessToken(tokenId: "${tokenId}") }`, {}, headers);
        expect(res.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
        messages.push(res.body.errors![0]!.message.replace(tokenId, "<id>"));
      }
      expect(messages[0]).toBe(messages[1]);
      const unknown = await h.graphql(
        `mutation { revokeAccessToken(tokenId: "00000000-0000-4000-8000-000000000000") }`,
        {},
        callers["holding MANAGE_ACCESS_TOKENS"]!.headers,
      );
      expect(unknown.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    });

    it.each([
      ["its owner (who created it for someone else)", MANAGER, "ok"],
      ["its actor", GENERATOR, "ok"],
      ["a stranger holding GENERATE_PERSONAL_ACCESS_TOKENS", STRANGER, "FORBIDDEN"],
      ["its actor without GENERATE_PERSONAL_ACCESS_TOKENS", NOBODY, "FORBIDDEN"],
    ])("by %s: %s", async (_who, revoker, expected) => {
      const actorOfToken = revoker === NOBODY ? NOBODY : GENERATOR;
      const target = await fixtures.tokenActingForCaller(actorOfToken);
      const revokerHeaders = bearer((await createToken(h, revoker)).token);
      const res = await h.graphql(`mutation { revokeAccessToken(tokenId: "${target.id}") }`, {}, revokerHeaders);
      expect(res.body.errors?.[0]?.extensions?.code ?? "ok").toBe(expected);
      const stillWorks = (await h.graphql(`{ me { urn } }`, {}, bearer(target.token))).status === 200;
      expect(stillWorks).toBe(expected !== "ok");
    });
  });
});
