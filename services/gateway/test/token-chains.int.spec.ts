/**
 * A token's chain (docs/authorization.md), over real HTTP, PostgreSQL and Redis: at every use a token holds only
 * what its actor, its scopes, its minter and the token it was minted with (each as they are now) all allow; it expires
 * no later than that token, and stops working, on every replica within 1 s, when that token is revoked. The system
 * client naming no user acts as the system actor.
 */
import { MAX_TOKEN_CHAIN_DEPTH, SYSTEM_ACTOR_URN } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import {
  ROOT,
  bearer,
  grant,
  mintToken,
  startGateway,
  systemClientHeaders,
  type GraphQLBody,
  type Harness,
} from "./support/gateway-harness";

const ME = `{ me { urn privileges } }`;
const CREATE = `mutation($i: GetAccessTokenInput!) {
  createAccessToken(input: $i) { accessToken metadata { id actorUrn ownerUrn expiresAt scopes parentTokenId } }
}`;
const CREATE_POLICY = `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`;
const LIST_TESTS = `{ listTests(input: {}) { total } }`;

interface Created {
  accessToken: string;
  metadata: {
    id: string;
    actorUrn: string;
    ownerUrn: string;
    expiresAt: number | null;
    scopes: string[] | null;
    parentTokenId: string | null;
  };
}

/** Polls until `check` holds; returns how long that took after `since` (throws past `limitMs`). */
async function msUntil(since: number, check: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
  await eventually("true", check, { timeoutMs: since + limitMs - Date.now() });
  return Date.now() - since;
}

/** The id (jti) a token's claims carry. */
const idOf = (token: string): string =>
  (JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as { jti: string }).jti;

const errorOf = (body: GraphQLBody) => ({
  code: body.errors?.[0]?.extensions?.code,
  message: body.errors?.[0]?.message,
});

describe("a token's chain", () => {
  let h: Harness;
  /** a second replica on the same database, Redis and prefix */
  let b: Harness;
  const asRoot = systemClientHeaders(ROOT);
  const input = (actorUrn: string, more: Record<string, unknown> = {}) => ({
    i: { type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "chained", ...more },
  });
  /** createAccessToken as `headers`; the token, or the refusal */
  const create = async (headers: Record<string, string>, actorUrn: string, more: Record<string, unknown> = {}) => {
    const res = await h.graphql(CREATE, input(actorUrn, more), headers);
    return {
      created: (res.body.data?.createAccessToken ?? undefined) as Created | undefined,
      error: errorOf(res.body),
    };
  };
  const mint = async (headers: Record<string, string>, actorUrn: string, more: Record<string, unknown> = {}) => {
    const { created, error } = await create(headers, actorUrn, more);
    if (!created) throw new Error(JSON.stringify(error));
    return created;
  };
  const privileges = async (on: Harness, headers: Record<string, string>) =>
    ((await on.graphql(ME, {}, headers)).body.data?.me as { privileges: string[] } | undefined)?.privileges;
  /** a policy granting `privileges` to `userUrn` alone; its urn */
  const policy = async (userUrn: string, privileges: string[]): Promise<string> => {
    const res = await h.graphql(
      CREATE_POLICY,
      {
        i: {
          name: `${privileges.join(",")} for ${userUrn}`,
          state: "ACTIVE",
          privileges,
          actors: { users: [userUrn] },
        },
      },
      asRoot,
    );
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data!.createPolicy as string;
  };
  const deletePolicy = async (urn: string) => {
    const res = await h.graphql(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: urn }, asRoot);
    expect(res.body.errors).toBeUndefined();
  };

  beforeAll(async () => {
    h = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    b = await startGateway({
      DATABASE_URL: h.config.DATABASE_URL,
      QUEUE_PREFIX: h.config.QUEUE_PREFIX,
      ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true",
    });
  });
  afterAll(async () => {
    await b?.close();
    await h?.close();
  });

  describe("a token gains nothing its minter lacks, whenever its user gains it", () => {
    const MANAGER = "urn:li:corpuser:f2-manager"; // MANAGE_ACCESS_TOKENS only
    const NOBODY = "urn:li:corpuser:f2-nobody"; // nothing, until granted MANAGE_POLICIES below
    let viaSystem: Created; // minted by the system client acting for the manager (the web app's way)
    let viaToken: Created; // minted with the manager's own token
    const grantToManager = {
      i: {
        name: "manager grants itself",
        state: "ACTIVE",
        privileges: ["MANAGE_POLICIES", "MANAGE_SYSTEM_OPERATIONS"],
        actors: { users: [MANAGER] },
      },
    };

    beforeAll(async () => {
      await grant(h, MANAGER, ["MANAGE_ACCESS_TOKENS"]);
      viaSystem = await mint(systemClientHeaders(MANAGER), NOBODY, { duration: "ONE_YEAR" });
      const managerToken = await mint(systemClientHeaders(MANAGER), MANAGER, { duration: "NO_EXPIRY" });
      viaToken = await mint(bearer(managerToken.accessToken), NOBODY, { duration: "ONE_YEAR" });
      expect(viaToken.metadata).toMatchObject({ ownerUrn: MANAGER, parentTokenId: managerToken.metadata.id });
      expect(viaSystem.metadata).toMatchObject({ ownerUrn: MANAGER, parentTokenId: null });
      await grant(h, NOBODY, ["MANAGE_POLICIES"]);
    });

    it.each([
      ["the system client", () => viaSystem],
      ["a token of its own", () => viaToken],
    ])(
      "minted through %s, the token cannot use MANAGE_POLICIES, which its user gained later and its minter lacks",
      async (_how, token) => {
        const headers = bearer(token().accessToken);
        expect(await privileges(h, headers)).toEqual([]);
        const res = await h.graphql(CREATE_POLICY, grantToManager, headers);
        expect(errorOf(res.body)).toEqual({
          code: "FORBIDDEN",
          message:
            `${NOBODY} is unauthorized to create policies: the access token was created by ${MANAGER}, ` +
            `who does not hold MANAGE_POLICIES.`,
        });
        expect(errorOf((await h.graphql(`{ listPolicies(input: {}) { total } }`, {}, headers)).body).code).toBe(
          "FORBIDDEN",
        );
        // Nothing was granted to the manager.
        expect([...(await h.services.engine.grantsOf(MANAGER))]).not.toContain("MANAGE_POLICIES");
        expect(await h.prisma.auditEvent.count({ where: { action: "policy.create", actorUrn: NOBODY } })).toBe(0);
      },
    );

    it("the user's own request still may (the token is bounded, not the user), and so may the token once the minter holds it too", async () => {
      expect((await h.graphql(`{ listPolicies(input: {}) { total } }`, {}, systemClientHeaders(NOBODY))).status).toBe(
        200,
      );
      const granted = await policy(MANAGER, ["MANAGE_POLICIES"]);
      try {
        await msUntil(Date.now(), async () => (await privileges(h, bearer(viaSystem.accessToken)))?.length === 1);
        expect(await privileges(h, bearer(viaToken.accessToken))).toEqual(["MANAGE_POLICIES"]);
      } finally {
        await deletePolicy(granted);
      }
    });
  });

  it("a minter that loses a privilege takes it from the tokens it minted, on another replica within 1 s", async () => {
    const MINTER = "urn:li:corpuser:b-minter";
    const USER = "urn:li:corpuser:b-user";
    await grant(h, MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const views = await policy(MINTER, ["VIEW_TESTS"]);
    await grant(h, USER, ["VIEW_TESTS", "GET_ENTITY"]);
    const { accessToken } = await mint(systemClientHeaders(MINTER), USER, { scopes: ["VIEW_TESTS"] });
    expect(await privileges(b, bearer(accessToken))).toEqual(["VIEW_TESTS"]);
    expect((await b.graphql(LIST_TESTS, {}, bearer(accessToken))).body.errors).toBeUndefined();

    const startedAt = Date.now();
    await deletePolicy(views);
    const ms = await msUntil(startedAt, async () => (await privileges(b, bearer(accessToken)))?.length === 0);
    expect(ms).toBeLessThan(1000);
    expect(errorOf((await b.graphql(LIST_TESTS, {}, bearer(accessToken))).body)).toEqual({
      code: "FORBIDDEN",
      message:
        `${USER} is unauthorized to list metadata tests: the access token was created by ${MINTER}, ` +
        `who does not hold VIEW_TESTS.`,
    });
    // The user itself keeps it.
    expect(await privileges(b, systemClientHeaders(USER))).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
  });

  describe("a token does not outlive the token it was minted with", () => {
    const USER = "urn:li:corpuser:c-user";
    beforeAll(() => grant(h, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]));

    it.each(["ONE_YEAR", "ONE_DAY", "NO_EXPIRY"])(
      "refuses a %s token minted with a one-hour scoped token: 400 naming input.duration and when the parent expires",
      async (duration) => {
        const parent = await mint(asRoot, USER, {
          duration: "ONE_HOUR",
          scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"],
        });
        const before = await h.prisma.accessToken.count();
        const { created, error } = await create(bearer(parent.accessToken), USER, { duration });
        expect(created).toBeUndefined();
        expect(error).toEqual({
          code: "BAD_USER_INPUT",
          message:
            `input.duration ${duration} would outlive the access token in use, which expires at ` +
            `${new Date(parent.metadata.expiresAt!).toISOString()}: a token created with another may not expire ` +
            `after it; choose a shorter duration, or create it with a longer-lived token`,
        });
        expect(await h.prisma.accessToken.count()).toBe(before);
      },
    );

    it("mints one that ends within the parent's life, and records the parent", async () => {
      const parent = await mint(asRoot, USER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER, { duration: "ONE_HOUR" });
      expect(child.metadata.parentTokenId).toBe(parent.metadata.id);
      expect(child.metadata.expiresAt!).toBeLessThanOrEqual(parent.metadata.expiresAt!);
      const listed = await h.graphql(
        `{ listAccessTokens(input: {filters: [{field: "id", value: "${child.metadata.id}"}]}) { tokens { parentTokenId } } }`,
        {},
        asRoot,
      );
      expect(listed.body.data).toEqual({ listAccessTokens: { tokens: [{ parentTokenId: parent.metadata.id }] } });
      const audit = await h.prisma.auditEvent.findFirstOrThrow({
        where: { action: "accessToken.create", targetUrn: `urn:li:dataHubAccessToken:${child.metadata.id}` },
      });
      expect(audit.details).toMatchObject({ parentTokenId: parent.metadata.id, via: "token" });
    });

    it("refuses a child whose parent is revoked, on both replicas within 1 s", async () => {
      const parent = await mint(asRoot, USER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER);
      // Both replicas verify (and cache) the child and its parent.
      for (const on of [h, b]) expect((await on.graphql(ME, {}, bearer(child.accessToken))).status).toBe(200);

      const startedAt = Date.now();
      const revoked = await h.graphql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        {
          t: parent.metadata.id,
        },
        asRoot,
      );
      expect(revoked.body.data).toEqual({ revokeAccessToken: true });
      const ms = await msUntil(startedAt, async () => {
        const answers = await Promise.all([h, b].map((on) => on.graphql(ME, {}, bearer(child.accessToken))));
        return answers.every((r) => r.status === 401);
      });
      expect(ms).toBeLessThan(1000);
      const refused = await b.graphql(ME, {}, bearer(child.accessToken));
      expect(refused.body.errors?.[0]?.message).toBe(
        `Token has been revoked: the access token it was created with (${parent.metadata.id}) is revoked.`,
      );
      // Counted as a revocation.
      const metrics = await (await fetch(`${b.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/mdp_token_verifications_total\{result="refused",reason="revoked"\} [1-9]/);
    });

    it("refuses a child whose parent's user had all tokens revoked, on both replicas within 1 s", async () => {
      const MANAGER = "urn:li:corpuser:c-manager";
      await grant(h, MANAGER, ["MANAGE_ACCESS_TOKENS", "GET_ENTITY"]);
      const parent = await mint(asRoot, MANAGER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER); // another user's token: not revoked by the call
      for (const on of [h, b]) expect((await on.graphql(ME, {}, bearer(child.accessToken))).status).toBe(200);

      const startedAt = Date.now();
      const res = await h.graphql(`mutation($a: String!) { revokeAccessTokens(actorUrn: $a) }`, { a: MANAGER }, asRoot);
      expect(res.body.data).toEqual({ revokeAccessTokens: 1 });
      const ms = await msUntil(startedAt, async () => {
        const answers = await Promise.all([h, b].map((on) => on.graphql(ME, {}, bearer(child.accessToken))));
        return answers.every((r) => r.status === 401);
      });
      expect(ms).toBeLessThan(1000);
    });

    it("refuses a child whose parent expired (a row made so: minting never lets a child outlive its parent)", async () => {
      const expired = await mintToken(h, USER, Math.floor(Date.now() / 1000) - 60);
      const parentId = idOf(expired);
      const child = await mint(asRoot, USER);
      await h.prisma.accessToken.update({ where: { id: child.metadata.id }, data: { parentTokenId: parentId } });
      const refused = await h.graphql(ME, {}, bearer(child.accessToken));
      expect(refused.status).toBe(401);
      expect(refused.body.errors?.[0]?.message).toBe(
        `Token has been revoked: the access token it was created with (${parentId}) has expired.`,
      );
    });
  });

  describe("a scoped parent", () => {
    const HOLDER = "urn:li:corpuser:d-holder"; // mints with a token scoped to MANAGE_ACCESS_TOKENS, GET_ENTITY, VIEW_TESTS
    const USER = "urn:li:corpuser:d-user"; // GET_ENTITY, VIEW_TESTS, MANAGE_TESTS
    let parent: Created;
    let holderViews: string;

    beforeAll(async () => {
      await grant(h, HOLDER, ["MANAGE_ACCESS_TOKENS", "GET_ENTITY"]);
      holderViews = await policy(HOLDER, ["VIEW_TESTS"]);
      await grant(h, USER, ["GET_ENTITY", "VIEW_TESTS", "MANAGE_TESTS"]);
      parent = await mint(systemClientHeaders(HOLDER), HOLDER, {
        duration: "ONE_DAY",
        scopes: ["MANAGE_ACCESS_TOKENS", "GET_ENTITY", "VIEW_TESTS"],
      });
    });

    it("refuses a child asking for more than its scopes, naming what is wider, and stores nothing", async () => {
      const before = await h.prisma.accessToken.count();
      const { error } = await create(bearer(parent.accessToken), USER, { scopes: ["GET_ENTITY", "MANAGE_TESTS"] });
      expect(error).toEqual({
        code: "FORBIDDEN",
        message:
          `${HOLDER} is unauthorized to generate an access token scoped to MANAGE_TESTS: the access token in use is ` +
          `scoped to GET_ENTITY, MANAGE_ACCESS_TOKENS, VIEW_TESTS, and a token it creates may have no other scopes.`,
      });
      expect(await h.prisma.accessToken.count()).toBe(before);
    });

    it("a child within them never holds more than the parent holds now, though its own user and scopes would", async () => {
      const child = await mint(bearer(parent.accessToken), USER, { scopes: ["GET_ENTITY", "VIEW_TESTS"] });
      expect(child.metadata).toMatchObject({ parentTokenId: parent.metadata.id, scopes: ["GET_ENTITY", "VIEW_TESTS"] });
      expect(await privileges(b, bearer(child.accessToken))).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
      // The parent's user loses VIEW_TESTS: the parent no longer holds it, so neither does the child, on any replica.
      const startedAt = Date.now();
      await deletePolicy(holderViews);
      const ms = await msUntil(startedAt, async () => (await privileges(b, bearer(child.accessToken)))?.length === 1);
      expect(ms).toBeLessThan(1000);
      expect(await privileges(b, bearer(child.accessToken))).toEqual(["GET_ENTITY"]);
      expect(await privileges(b, bearer(parent.accessToken))).toEqual([
        "GENERATE_PERSONAL_ACCESS_TOKENS",
        "GET_ENTITY",
        "MANAGE_ACCESS_TOKENS",
      ]);
    });
  });

  it("a token minted with a token loses what that token loses later, and the refusal names the parent", async () => {
    const MINTER = "urn:li:corpuser:p-minter"; // MANAGE_ACCESS_TOKENS; VIEW_TESTS until it loses it
    const USER = "urn:li:corpuser:p-user"; // GENERATE_PERSONAL_ACCESS_TOKENS, VIEW_TESTS
    await grant(h, MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const views = await policy(MINTER, ["VIEW_TESTS"]);
    await grant(h, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
    const parent = await mint(systemClientHeaders(MINTER), USER, { duration: "ONE_DAY" }); // minter: MINTER
    // The user's own token, made with the parent: no minter of its own to bound it, only the parent.
    const child = await mint(bearer(parent.accessToken), USER);
    expect(child.metadata).toMatchObject({ ownerUrn: USER, parentTokenId: parent.metadata.id });
    await deletePolicy(views);
    await msUntil(Date.now(), async () => !(await privileges(h, bearer(child.accessToken)))?.includes("VIEW_TESTS"));
    expect(errorOf((await h.graphql(LIST_TESTS, {}, bearer(child.accessToken))).body)).toEqual({
      code: "FORBIDDEN",
      message:
        `${USER} is unauthorized to list metadata tests: the access token it was created with does not hold ` +
        `VIEW_TESTS.`,
    });
    // Nor can the parent be traded for an unscoped token of the user holding more than it.
    const { error } = await create(bearer(parent.accessToken), USER);
    expect(error).toEqual({
      code: "FORBIDDEN",
      message:
        `${USER} is unauthorized to generate this access token: the access token in use does not hold VIEW_TESTS ` +
        `(its creator or the token it was created with does not), and a token it creates may hold no more than it; ` +
        `name scopes within what it holds.`,
    });
  });

  describe(`chains of at most ${MAX_TOKEN_CHAIN_DEPTH} tokens`, () => {
    const USER = "urn:li:corpuser:depth-user";
    beforeAll(() => grant(h, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS"]));

    it(`the ${MAX_TOKEN_CHAIN_DEPTH}th token of a chain cannot create another (400 naming the limit)`, async () => {
      let token = await mint(asRoot, USER, { duration: "NO_EXPIRY" });
      for (let i = 1; i < MAX_TOKEN_CHAIN_DEPTH; i++) {
        token = await mint(bearer(token.accessToken), USER, { duration: "NO_EXPIRY" });
      }
      expect((await h.graphql(ME, {}, bearer(token.accessToken))).status).toBe(200);
      const { error } = await create(bearer(token.accessToken), USER, { duration: "NO_EXPIRY" });
      expect(error).toEqual({
        code: "BAD_USER_INPUT",
        message: expect.stringContaining(
          `the access token in use is the last of a chain of ${MAX_TOKEN_CHAIN_DEPTH} tokens`,
        ),
      });
    });

    it("refuses a token whose chain of rows loops (not made by this service) rather than following it", async () => {
      const [first, second] = [await mint(asRoot, USER), await mint(asRoot, USER)];
      await h.prisma.accessToken.update({
        where: { id: first.metadata.id },
        data: { parentTokenId: second.metadata.id },
      });
      await h.prisma.accessToken.update({
        where: { id: second.metadata.id },
        data: { parentTokenId: first.metadata.id },
      });
      const res = await h.graphql(ME, {}, bearer(first.accessToken));
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.message).toBe("Unable to verify the provided token.");
    });
  });

  describe("the principals of the built-in policy: no token for the system actor, root's only by root", () => {
    const HOLDER = "urn:li:corpuser:p-holder"; // MANAGE_ACCESS_TOKENS (and so GENERATE_PERSONAL_ACCESS_TOKENS) only
    const scoped = { scopes: ["MANAGE_ACCESS_TOKENS"] }; // privileges the holder holds, so no other check refuses
    let holderToken: Created;
    const basicRaw = { authorization: systemClientHeaders(ROOT).authorization! };
    const tokensFor = (actorUrn: string) => h.prisma.accessToken.count({ where: { actorUrn } });
    const createRows = (actorUrn: string) =>
      h.prisma.auditEvent.count({
        where: { action: "accessToken.create", details: { path: ["actorUrn"], equals: actorUrn } },
      });

    beforeAll(async () => {
      await grant(h, HOLDER, ["MANAGE_ACCESS_TOKENS"]);
      holderToken = await mint(systemClientHeaders(HOLDER), HOLDER);
    });

    it("refuses a token for the system actor (400 naming input.actorUrn), whoever asks, and stores nothing", async () => {
      for (const headers of [
        systemClientHeaders(HOLDER),
        bearer(holderToken.accessToken),
        asRoot,
        basicRaw, // the system client itself: the system actor is its identity, not a token's
      ]) {
        const { created, error } = await create(headers, SYSTEM_ACTOR_URN, scoped);
        expect(created).toBeUndefined();
        expect(error).toEqual({
          code: "BAD_USER_INPUT",
          message: expect.stringContaining(`input.actorUrn ${SYSTEM_ACTOR_URN} is the system actor`),
        });
      }
      expect(await tokensFor(SYSTEM_ACTOR_URN)).toBe(0);
      expect(await createRows(SYSTEM_ACTOR_URN)).toBe(0);
    });

    it("refuses, as unverifiable, a token acting as the system actor that exists from before", async () => {
      const earlier = await mintToken(h, SYSTEM_ACTOR_URN, Math.floor(Date.now() / 1000) + 3600);
      const res = await h.graphql(`{ me { urn } }`, {}, bearer(earlier));
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.message).toBe("Unable to verify the provided token.");
    });

    it("refuses a token for the root user to anyone but the root user (403), even scoped to what the minter holds", async () => {
      const before = await tokensFor(ROOT);
      for (const [headers, caller] of [
        [systemClientHeaders(HOLDER), HOLDER],
        [bearer(holderToken.accessToken), HOLDER],
        [basicRaw, SYSTEM_ACTOR_URN],
      ] as const) {
        const { created, error } = await create(headers, ROOT, scoped);
        expect(created).toBeUndefined();
        expect(error).toEqual({
          code: "FORBIDDEN",
          message:
            `${caller} is unauthorized to generate access tokens for ${ROOT}, the root user: only the root user ` +
            `mints its own tokens.`,
        });
      }
      expect(await tokensFor(ROOT)).toBe(before);
    });

    it("still lets the root user mint its own: through the system client naming it, and with its own token", async () => {
      const own = await mint(asRoot, ROOT, { duration: "ONE_DAY" });
      expect(own.metadata).toMatchObject({ actorUrn: ROOT, ownerUrn: ROOT, parentTokenId: null });
      const child = await mint(bearer(own.accessToken), ROOT, scoped);
      expect(child.metadata).toMatchObject({ actorUrn: ROOT, ownerUrn: ROOT, parentTokenId: own.metadata.id });
    });
  });

  describe("the system client naming no user", () => {
    const basicRaw = {
      authorization: systemClientHeaders(ROOT).authorization!,
    };

    it("acts as the system actor, whose audit rows name it", async () => {
      expect((await h.graphql(`{ me { urn } }`, {}, basicRaw)).body).toEqual({
        data: { me: { urn: SYSTEM_ACTOR_URN } },
      });
      const USER = "urn:li:corpuser:e-user";
      const created = await mint(basicRaw, USER);
      expect(created.metadata).toMatchObject({ ownerUrn: SYSTEM_ACTOR_URN, parentTokenId: null });
      const revoked = await h.graphql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: created.metadata.id },
        basicRaw,
      );
      expect(revoked.body.data).toEqual({ revokeAccessToken: true });
      const rows = await h.prisma.auditEvent.findMany({
        where: { targetUrn: `urn:li:dataHubAccessToken:${created.metadata.id}` },
        orderBy: { id: "asc" },
      });
      expect(
        rows.map((r) => ({ actor: r.actorUrn, action: r.action, via: (r.details as { via: string }).via })),
      ).toEqual([
        { actor: SYSTEM_ACTOR_URN, action: "accessToken.create", via: "system" },
        { actor: SYSTEM_ACTOR_URN, action: "accessToken.revoke", via: "system" },
      ]);
    });

    it("still acts for the user an actor header names", async () => {
      const res = await h.graphql(`{ me { urn } }`, {}, { ...basicRaw, "x-datahub-actor": "urn:li:corpuser:e-other" });
      expect(res.body).toEqual({ data: { me: { urn: "urn:li:corpuser:e-other" } } });
    });
  });
});
