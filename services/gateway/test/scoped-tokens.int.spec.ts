/**
 * Scoped access tokens and revoking all of a user's tokens at once, over real HTTP, PostgreSQL and
 * Redis: a token limited to some of its actor's privileges can use only those, on every route (GraphQL, HTTP
 * operations, evaluate's push, the queue dashboard), and loses one its actor loses; unscoped tokens are unchanged;
 * revokeAccessTokens revokes, audits and counts, and a second gateway refuses the tokens within 1 s.
 */
import { PRIVILEGES } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
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

const READER = "urn:li:corpuser:reader"; // GET_ENTITY, VIEW_TESTS, GENERATE_PERSONAL_ACCESS_TOKENS
const OPERATOR = "urn:li:corpuser:operator"; // MANAGE_SYSTEM_OPERATIONS, GENERATE_PERSONAL_ACCESS_TOKENS
const MANAGER = "urn:li:corpuser:token-manager"; // MANAGE_ACCESS_TOKENS
const BULK = "urn:li:corpuser:bulk"; // GENERATE_PERSONAL_ACCESS_TOKENS; has tokens revoked in bulk
const ME = `{ me { urn privileges } }`;
const CREATE = `mutation($i: GetAccessTokenInput!) {
  createAccessToken(input: $i) { accessToken metadata { id actorUrn ownerUrn scopes } }
}`;
const REVOKE_ALL = `mutation($a: String!) { revokeAccessTokens(actorUrn: $a) }`;
const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";
const DRY_RUN = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1 };
const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

/** Polls until `check` holds; returns how long that took after `since` (throws past `limitMs`). */
async function msUntil(since: number, check: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
  await eventually("true", check, { timeoutMs: since + limitMs - Date.now() });
  return Date.now() - since;
}

describe("scoped access tokens", () => {
  let h: Harness;
  const asRoot = systemClientHeaders(ROOT);
  const input = (actorUrn: string, more: Record<string, unknown> = {}) => ({
    i: { type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "scoped", ...more },
  });
  const scoped = async (actorUrn: string, scopes: string[], as = asRoot) =>
    bearer((await createToken(h, actorUrn, as, { scopes })).token);
  const privileges = async (headers: Record<string, string>) =>
    ((await h.graphql(ME, {}, headers)).body.data?.me as { privileges: string[] } | undefined)?.privileges;
  const errorOf = (body: { errors?: Array<{ message: string; extensions?: { code?: string } }> }) => ({
    code: body.errors?.[0]?.extensions?.code,
    message: body.errors?.[0]?.message,
  });
  const dashboard = (token: string) =>
    fetch(`${h.baseUrl}/admin/queues`, {
      headers: { authorization: `Basic ${Buffer.from(`anyone:${token}`).toString("base64")}` },
    });

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, READER, ["GET_ENTITY", "VIEW_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    await grant(h, OPERATOR, ["MANAGE_SYSTEM_OPERATIONS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    await grant(h, MANAGER, ["MANAGE_ACCESS_TOKENS"]);
    await grant(h, BULK, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
  });
  afterAll(() => h?.close());

  describe("creating", () => {
    it("stores the scopes, canonical (DataHub's spellings, repeats), and shows them in every metadata answer", async () => {
      const res = await h.graphql(
        CREATE,
        input(READER, { scopes: ["VIEW_TESTS", "GET_ENTITY_PRIVILEGE", "GET_ENTITY"] }),
        asRoot,
      );
      expect(res.body.errors).toBeUndefined();
      const created = res.body.data!.createAccessToken as { accessToken: string; metadata: { id: string } };
      expect(created.metadata).toMatchObject({ actorUrn: READER, scopes: ["GET_ENTITY", "VIEW_TESTS"] });
      const listed = await h.graphql(
        `{ listAccessTokens(input: {filters: [{field: "id", value: "${created.metadata.id}"}]}) { tokens { scopes } } }`,
        {},
        asRoot,
      );
      expect(listed.body.data).toEqual({ listAccessTokens: { tokens: [{ scopes: ["GET_ENTITY", "VIEW_TESTS"] }] } });
      const read = await h.graphql(
        `query($t: String!) { getAccessTokenMetadata(token: $t) { scopes } }`,
        { t: created.accessToken },
        asRoot,
      );
      expect(read.body.data).toEqual({ getAccessTokenMetadata: { scopes: ["GET_ENTITY", "VIEW_TESTS"] } });
    });

    it("shows null scopes for an unscoped token, which keeps all of its actor's privileges", async () => {
      const res = await h.graphql(CREATE, input(READER), asRoot);
      const created = res.body.data!.createAccessToken as { accessToken: string; metadata: { scopes: unknown } };
      expect(created.metadata.scopes).toBeNull();
      expect(await privileges(bearer(created.accessToken))).toEqual([
        "GENERATE_PERSONAL_ACCESS_TOKENS",
        "GET_ENTITY",
        "VIEW_TESTS",
      ]);
    });

    it.each([
      [
        "an unknown name",
        ["GET_ENTITY", "READ_EVERYTHING"],
        "input.scopes[1] 'READ_EVERYTHING' is not a privilege; known: GENERATE_",
      ],
      [
        "an empty list",
        [],
        "input.scopes must name at least one privilege; leave it out for a token with all of its actor's",
      ],
      ["33 names", Array.from({ length: 33 }, () => "GET_ENTITY"), "input.scopes lists 33 privileges; the limit is 32"],
      [
        "a 5000-character name, cut in the answer",
        ["x".repeat(5000)],
        `input.scopes[0] '${"x".repeat(100)}…' is not a privilege`,
      ],
    ])("refuses %s as bad input naming the field, and stores nothing", async (_what, scopes, message) => {
      const before = await h.prisma.accessToken.count();
      const res = await h.graphql(CREATE, input(READER, { scopes }), asRoot);
      expect(errorOf(res.body)).toEqual({ code: "BAD_USER_INPUT", message: expect.stringContaining(message) });
      expect(await h.prisma.accessToken.count()).toBe(before);
    });

    it("refuses a scope its actor does not hold (403 naming it), whoever asks: the root user through the system client too", async () => {
      const own = await h.graphql(CREATE, input(READER, { scopes: ["GET_ENTITY", "MANAGE_POLICIES"] }), {
        ...(await scoped(READER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"])),
      });
      // A scoped caller's limit is checked first: MANAGE_POLICIES is wider than its own token.
      expect(errorOf(own.body)).toEqual({
        code: "FORBIDDEN",
        message: expect.stringContaining(
          `${READER} is unauthorized to generate an access token scoped to MANAGE_POLICIES`,
        ),
      });
      const unscopedCaller = bearer((await createToken(h, READER)).token);
      const lacking = await h.graphql(CREATE, input(READER, { scopes: ["MANAGE_POLICIES"] }), unscopedCaller);
      expect(errorOf(lacking.body)).toEqual({
        code: "FORBIDDEN",
        message:
          `${READER} is unauthorized to generate an access token scoped to MANAGE_POLICIES: you do not hold it, ` +
          `and a token may have only privileges of its actor.`,
      });
      const bySystem = await h.graphql(CREATE, input(READER, { scopes: ["TRUNCATE_TIMESERIES_INDEX"] }), asRoot);
      expect(errorOf(bySystem.body).code).toBe("FORBIDDEN");
      expect(
        await h.prisma.accessToken.count({ where: { actorUrn: READER, scopes: { has: "MANAGE_POLICIES" } } }),
      ).toBe(0);
    });
  });

  describe("every privilege check honours the scopes", () => {
    let readOnly: Record<string, string>;
    let readOnlyToken: string;
    let unscoped: Record<string, string>;
    let unscopedToken: string;

    beforeAll(async () => {
      readOnlyToken = (await createToken(h, ROOT, asRoot, { scopes: ["GET_ENTITY", "VIEW_TESTS"] })).token;
      readOnly = bearer(readOnlyToken);
      unscopedToken = (await createToken(h, ROOT)).token;
      unscoped = bearer(unscopedToken);
    });

    it("me shows the request's own privileges: the root user's read-only token has two", async () => {
      expect(await privileges(readOnly)).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
      expect(await privileges(unscoped)).toHaveLength(PRIVILEGES.length);
    });

    it("a read-only token of the root user cannot truncate; its unscoped token can", async () => {
      const refused = await h.post(TRUNCATE, DRY_RUN, readOnly);
      expect(refused).toEqual({
        status: 403,
        body: expect.objectContaining({
          code: "FORBIDDEN",
          message: `${ROOT} is unauthorized to truncate time-series indexes: the access token's scopes leave out TRUNCATE_TIMESERIES_INDEX.`,
        }),
      });
      expect((await h.post(TRUNCATE, DRY_RUN, unscoped)).status).toBe(200);
    });

    it("a read-only token cannot push test results (evaluate with push: true)", async () => {
      const res = await h.post("/gms/test?action=evaluate", { urn: DATASET, push: true }, readOnly);
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(
        `${ROOT} is unauthorized to push metadata test results: the access token's scopes leave out MANAGE_TESTS.`,
      );
    });

    it("a read-only token cannot mint a token, for itself or anyone", async () => {
      for (const actorUrn of [ROOT, READER]) {
        const res = await h.graphql(CREATE, input(actorUrn), readOnly);
        expect(errorOf(res.body)).toEqual({
          code: "FORBIDDEN",
          message: `${ROOT} is unauthorized to generate access tokens: the access token's scopes leave out GENERATE_PERSONAL_ACCESS_TOKENS.`,
        });
      }
    });

    it("a read-only token cannot open the queue dashboard or change policies; it still reads what its scopes allow", async () => {
      expect((await dashboard(readOnlyToken)).status).toBe(403);
      expect((await dashboard(unscopedToken)).status).toBe(200);
      const policies = await h.graphql(`{ listPolicies(input: {}) { total } }`, {}, readOnly);
      expect(errorOf(policies.body).code).toBe("FORBIDDEN");
      const entity = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(DATASET)}`, { headers: readOnly });
      expect(entity.status).toBe(404); // allowed, and there is no such entity
      const tests = await h.graphql(`{ listTests(input: {}) { total } }`, {}, readOnly);
      expect(tests.body.errors).toBeUndefined();
    });

    it("a scope grants what it implies: MANAGE_SYSTEM_OPERATIONS lets the operator's token truncate, nothing else", async () => {
      const headers = await scoped(OPERATOR, ["MANAGE_SYSTEM_OPERATIONS"]);
      expect(await privileges(headers)).toEqual([
        "GET_TASK_STATUS",
        "GET_TIMESERIES_INDEX_SIZES",
        "MANAGE_SYSTEM_OPERATIONS",
        "TRUNCATE_TIMESERIES_INDEX",
      ]);
      expect((await h.post(TRUNCATE, DRY_RUN, headers)).status).toBe(200);
      expect(errorOf((await h.graphql(CREATE, input(OPERATOR), headers)).body).code).toBe("FORBIDDEN");
    });

    it("a privilege the actor loses leaves its scoped token too (intersection at every check, not at mint)", async () => {
      const user = "urn:li:corpuser:loses-views";
      await grant(h, user, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
      const policy = await h.graphql(
        `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
        { i: { name: "views", state: "ACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [user] } } },
        asRoot,
      );
      const headers = await scoped(user, ["VIEW_TESTS"]);
      expect(await privileges(headers)).toEqual(["VIEW_TESTS"]);
      await h.graphql(`mutation { deletePolicy(urn: "${policy.body.data!.createPolicy as string}") }`, {}, asRoot);
      await msUntil(Date.now(), async () => (await privileges(headers))?.length === 0);
      expect(errorOf((await h.graphql(`{ listTests(input: {}) { total } }`, {}, headers)).body).code).toBe("FORBIDDEN");
    });
  });

  describe("tokens created with a scoped token are at most its scopes", () => {
    it("one created without scopes gets the caller's token's scopes", async () => {
      const caller = await scoped(READER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]);
      const res = await h.graphql(CREATE, input(READER), caller);
      const created = res.body.data!.createAccessToken as { accessToken: string; metadata: { scopes: string[] } };
      expect(created.metadata.scopes).toEqual(["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]);
      expect(await privileges(bearer(created.accessToken))).toEqual(["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]);
    });

    it("one narrower is made; one wider is refused naming what is wider, even a privilege the user holds", async () => {
      const caller = await scoped(READER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]);
      const narrower = await h.graphql(CREATE, input(READER, { scopes: ["GET_ENTITY"] }), caller);
      expect((narrower.body.data?.createAccessToken as { metadata: { scopes: string[] } }).metadata.scopes).toEqual([
        "GET_ENTITY",
      ]);
      const wider = await h.graphql(CREATE, input(READER, { scopes: ["GET_ENTITY", "VIEW_TESTS"] }), caller);
      expect(errorOf(wider.body)).toEqual({
        code: "FORBIDDEN",
        message:
          `${READER} is unauthorized to generate an access token scoped to VIEW_TESTS: the access token in use is ` +
          `scoped to GENERATE_PERSONAL_ACCESS_TOKENS, GET_ENTITY, and a token it creates may have no other scopes.`,
      });
    });

    it("a token manager's token scoped to MANAGE_ACCESS_TOKENS may not create a token for another user wider than itself", async () => {
      const caller = await scoped(MANAGER, ["MANAGE_ACCESS_TOKENS"]);
      // READER's unscoped token could read entities, which the caller's token cannot.
      const unscopedForReader = await h.graphql(CREATE, input(READER, { scopes: ["GET_ENTITY"] }), caller);
      expect(errorOf(unscopedForReader.body).code).toBe("FORBIDDEN");
      const withinCaller = await h.graphql(
        CREATE,
        input(READER, { scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS"] }),
        caller,
      );
      expect(withinCaller.body.errors).toBeUndefined();
    });
  });

  describe("revokeAccessTokens", () => {
    const asBulk = async () => bearer((await createToken(h, BULK)).token);

    it("revokes every live token of the caller at once, counts them, audits each and the whole in one go", async () => {
      const otherUsers = await createToken(h, READER);
      const live = [
        await createToken(h, BULK),
        await createToken(h, BULK, asRoot, { scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS"] }),
      ];
      const alreadyRevoked = await createToken(h, BULK);
      await h.graphql(`mutation { revokeAccessToken(tokenId: "${alreadyRevoked.id}") }`, {}, asRoot);
      await mintToken(h, BULK, Math.floor(Date.now() / 1000) - 60); // expired: not live, not counted
      const caller = live[0]!;

      const res = await h.graphql(REVOKE_ALL, { a: BULK }, bearer(caller.token));
      expect(res.body).toEqual({ data: { revokeAccessTokens: 2 } });
      for (const token of live) expect((await h.graphql(ME, {}, bearer(token.token))).status).toBe(401);
      expect((await h.graphql(ME, {}, bearer(otherUsers.token))).status).toBe(200);

      const audit = await h.prisma.auditEvent.findMany({
        where: { action: { in: ["accessToken.revoke", "accessToken.revokeAll"] }, actorUrn: BULK },
        orderBy: { id: "asc" },
      });
      const rows = audit.map((a) => ({ action: a.action, target: a.targetUrn, details: a.details }));
      expect(rows).toHaveLength(3);
      expect(rows.slice(0, 2)).toEqual(
        expect.arrayContaining(
          live.map((t) => ({
            action: "accessToken.revoke",
            target: `urn:li:dataHubAccessToken:${t.id}`,
            details: { actorUrn: BULK, bulk: true, via: "token" },
          })),
        ),
      );
      expect(rows[2]).toEqual({ action: "accessToken.revokeAll", target: BULK, details: { count: 2, via: "token" } });
      expect(await h.graphql(REVOKE_ALL, { a: BULK }, await asBulk())).toMatchObject({
        body: { data: { revokeAccessTokens: 1 } }, // the token that just asked, made after the first call
      });
    });

    it("is refused for another user's tokens without MANAGE_ACCESS_TOKENS (nothing revoked), allowed with it", async () => {
      const victim = await createToken(h, READER);
      const refused = await h.graphql(REVOKE_ALL, { a: READER }, await asBulk());
      expect(errorOf(refused.body)).toEqual({
        code: "FORBIDDEN",
        message: `${BULK} is unauthorized to revoke the access tokens of other users.`,
      });
      expect((await h.graphql(ME, {}, bearer(victim.token))).status).toBe(200);
      const managerToken = bearer((await createToken(h, MANAGER)).token);
      const allowed = await h.graphql(REVOKE_ALL, { a: READER }, managerToken);
      expect(allowed.body.data?.revokeAccessTokens).toBeGreaterThanOrEqual(1);
      expect((await h.graphql(ME, {}, bearer(victim.token))).status).toBe(401);
      const scopedManager = await scoped(MANAGER, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
      expect(errorOf((await h.graphql(REVOKE_ALL, { a: READER }, scopedManager)).body).code).toBe("FORBIDDEN");
    });

    it("refuses a value that is no user urn as bad input naming actorUrn", async () => {
      const res = await h.graphql(REVOKE_ALL, { a: "alice" }, asRoot);
      expect(errorOf(res.body)).toEqual({ code: "BAD_USER_INPUT", message: expect.stringContaining("'actorUrn'") });
    });

    it("is refused by a second gateway within 1 s, for tokens it had verified and cached", async () => {
      const b = await startGateway({
        DATABASE_URL: h.config.DATABASE_URL,
        QUEUE_PREFIX: h.config.QUEUE_PREFIX,
      });
      try {
        const user = "urn:li:corpuser:two-gateways";
        const tokens = [await createToken(h, user), await createToken(h, user), await createToken(h, user)];
        for (const t of tokens) expect((await b.graphql(`{ me { urn } }`, {}, bearer(t.token))).status).toBe(200);
        const startedAt = Date.now();
        const res = await h.graphql(REVOKE_ALL, { a: user }, asRoot);
        expect(res.body).toEqual({ data: { revokeAccessTokens: 3 } });
        const ms = await msUntil(startedAt, async () => {
          const answers = await Promise.all(tokens.map((t) => b.graphql(`{ me { urn } }`, {}, bearer(t.token))));
          return answers.every((r) => r.status === 401);
        });
        expect(ms).toBeLessThan(1000);
      } finally {
        await b.close();
      }
    });
  });
});
