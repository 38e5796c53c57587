/**
 * A token's chain (docs/authorization.md), over real HTTP, PostgreSQL and Redis: at every use a token holds only what
 * its actor, its scopes, its minter and the token it was minted with (each as they are now) all allow, on every
 * replica.
 */
import { bearer, grant, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { ME, CREATE_POLICY, LIST_TESTS, Created, msUntil, errorOf } from "./support/token-chains";
import { startTokenChainsHarness } from "./support/token-chains-harness";

describe("a token's chain", () => {
  const tc = startTokenChainsHarness();
  const { asRoot, create, mint } = tc;

  const privileges = async (on: Harness, headers: Record<string, string>) =>
    ((await on.graphql(ME, {}, headers)).body.data?.me as { privileges: string[] } | undefined)?.privileges;
  /** a policy granting `privileges` to `userUrn` alone; its urn */
  const policy = async (userUrn: string, privileges: string[]): Promise<string> => {
    const res = await tc.gateway.graphql(
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
    const res = await tc.gateway.graphql(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: urn }, asRoot);
    expect(res.body.errors).toBeUndefined();
  };

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
      await grant(tc.gateway, MANAGER, ["MANAGE_ACCESS_TOKENS"]);
      viaSystem = await mint(systemClientHeaders(MANAGER), NOBODY, { duration: "ONE_YEAR" });
      const managerToken = await mint(systemClientHeaders(MANAGER), MANAGER, { duration: "NO_EXPIRY" });
      viaToken = await mint(bearer(managerToken.accessToken), NOBODY, { duration: "ONE_YEAR" });
      expect(viaToken.metadata).toMatchObject({ ownerUrn: MANAGER, parentTokenId: managerToken.metadata.id });
      expect(viaSystem.metadata).toMatchObject({ ownerUrn: MANAGER, parentTokenId: null });
      await grant(tc.gateway, NOBODY, ["MANAGE_POLICIES"]);
    });

    it.each([
      ["the system client", () => viaSystem],
      ["a token of its own", () => viaToken],
    ])(
      "minted through %s, the token cannot use MANAGE_POLICIES, which its user gained later and its minter lacks",
      async (_how, token) => {
        const headers = bearer(token().accessToken);
        expect(await privileges(tc.gateway, headers)).toEqual([]);
        const res = await tc.gateway.graphql(CREATE_POLICY, grantToManager, headers);
        expect(errorOf(res.body)).toEqual({
          code: "FORBIDDEN",
          message:
            `${NOBODY} is unauthorized to create policies: the access token was created by ${MANAGER}, ` +
            `who does not hold MANAGE_POLICIES.`,
        });
        expect(
          errorOf((await tc.gateway.graphql(`{ listPolicies(input: {}) { total } }`, {}, headers)).body).code,
        ).toBe("FORBIDDEN");
        // Nothing was granted to the manager.
        expect([...(await tc.gateway.services.engine.grantsOf(MANAGER))]).not.toContain("MANAGE_POLICIES");
        expect(await tc.gateway.prisma.auditEvent.count({ where: { action: "policy.create", actorUrn: NOBODY } })).toBe(
          0,
        );
      },
    );

    it("the user's own request still may (the token is bounded, not the user), and so may the token once the minter holds it too", async () => {
      expect(
        (await tc.gateway.graphql(`{ listPolicies(input: {}) { total } }`, {}, systemClientHeaders(NOBODY))).status,
      ).toBe(200);
      const granted = await policy(MANAGER, ["MANAGE_POLICIES"]);
      try {
        await msUntil(
          Date.now(),
          async () => (await privileges(tc.gateway, bearer(viaSystem.accessToken)))?.length === 1,
        );
        expect(await privileges(tc.gateway, bearer(viaToken.accessToken))).toEqual(["MANAGE_POLICIES"]);
      } finally {
        await deletePolicy(granted);
      }
    });
  });

  it("a minter that loses a privilege takes it from the tokens it minted, on another replica within 1 s", async () => {
    const MINTER = "urn:li:corpuser:b-minter";
    const USER = "urn:li:corpuser:b-user";
    await grant(tc.gateway, MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const views = await policy(MINTER, ["VIEW_TESTS"]);
    await grant(tc.gateway, USER, ["VIEW_TESTS", "GET_ENTITY"]);
    const { accessToken } = await mint(systemClientHeaders(MINTER), USER, { scopes: ["VIEW_TESTS"] });
    expect(await privileges(tc.replica, bearer(accessToken))).toEqual(["VIEW_TESTS"]);
    expect((await tc.replica.graphql(LIST_TESTS, {}, bearer(accessToken))).body.errors).toBeUndefined();

    const startedAt = Date.now();
    await deletePolicy(views);
    const ms = await msUntil(startedAt, async () => (await privileges(tc.replica, bearer(accessToken)))?.length === 0);
    expect(ms).toBeLessThan(1000);
    expect(errorOf((await tc.replica.graphql(LIST_TESTS, {}, bearer(accessToken))).body)).toEqual({
      code: "FORBIDDEN",
      message:
        `${USER} is unauthorized to list metadata tests: the access token was created by ${MINTER}, ` +
        `who does not hold VIEW_TESTS.`,
    });
    // The user itself keeps it.
    expect(await privileges(tc.replica, systemClientHeaders(USER))).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
  });

  describe("a scoped parent", () => {
    const HOLDER = "urn:li:corpuser:d-holder"; // mints with a token scoped to MANAGE_ACCESS_TOKENS, GET_ENTITY, VIEW_TESTS
    const USER = "urn:li:corpuser:d-user"; // GET_ENTITY, VIEW_TESTS, MANAGE_TESTS
    let parent: Created;
    let holderViews: string;

    beforeAll(async () => {
      await grant(tc.gateway, HOLDER, ["MANAGE_ACCESS_TOKENS", "GET_ENTITY"]);
      holderViews = await policy(HOLDER, ["VIEW_TESTS"]);
      await grant(tc.gateway, USER, ["GET_ENTITY", "VIEW_TESTS", "MANAGE_TESTS"]);
      parent = await mint(systemClientHeaders(HOLDER), HOLDER, {
        duration: "ONE_DAY",
        scopes: ["MANAGE_ACCESS_TOKENS", "GET_ENTITY", "VIEW_TESTS"],
      });
    });

    it("refuses a child asking for more than its scopes, naming what is wider, and stores nothing", async () => {
      const before = await tc.gateway.prisma.accessToken.count();
      const { error } = await create(bearer(parent.accessToken), USER, { scopes: ["GET_ENTITY", "MANAGE_TESTS"] });
      expect(error).toEqual({
        code: "FORBIDDEN",
        message:
          `${HOLDER} is unauthorized to generate an access token scoped to MANAGE_TESTS: the access token in use is ` +
          `scoped to GET_ENTITY, MANAGE_ACCESS_TOKENS, VIEW_TESTS, and a token it creates may have no other scopes.`,
      });
      expect(await tc.gateway.prisma.accessToken.count()).toBe(before);
    });

    it("a child within them never holds more than the parent holds now, though its own user and scopes would", async () => {
      const child = await mint(bearer(parent.accessToken), USER, { scopes: ["GET_ENTITY", "VIEW_TESTS"] });
      expect(child.metadata).toMatchObject({ parentTokenId: parent.metadata.id, scopes: ["GET_ENTITY", "VIEW_TESTS"] });
      expect(await privileges(tc.replica, bearer(child.accessToken))).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
      // The parent's user loses VIEW_TESTS: the parent no longer holds it, so neither does the child, on any replica.
      const startedAt = Date.now();
      await deletePolicy(holderViews);
      const ms = await msUntil(
        startedAt,
        async () => (await privileges(tc.replica, bearer(child.accessToken)))?.length === 1,
      );
      expect(ms).toBeLessThan(1000);
      expect(await privileges(tc.replica, bearer(child.accessToken))).toEqual(["GET_ENTITY"]);
      expect(await privileges(tc.replica, bearer(parent.accessToken))).toEqual([
        "GENERATE_PERSONAL_ACCESS_TOKENS",
        "GET_ENTITY",
        "MANAGE_ACCESS_TOKENS",
      ]);
    });
  });

  it("a token minted with a token loses what that token loses later, and the refusal names the parent", async () => {
    const MINTER = "urn:li:corpuser:p-minter"; // MANAGE_ACCESS_TOKENS; VIEW_TESTS until it loses it
    const USER = "urn:li:corpuser:p-user"; // GENERATE_PERSONAL_ACCESS_TOKENS, VIEW_TESTS
    await grant(tc.gateway, MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const views = await policy(MINTER, ["VIEW_TESTS"]);
    await grant(tc.gateway, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
    const parent = await mint(systemClientHeaders(MINTER), USER, { duration: "ONE_DAY" }); // minter: MINTER
    // The user's own token, made with the parent: no minter of its own to bound it, only the parent.
    const child = await mint(bearer(parent.accessToken), USER);
    expect(child.metadata).toMatchObject({ ownerUrn: USER, parentTokenId: parent.metadata.id });
    await deletePolicy(views);
    await msUntil(
      Date.now(),
      async () => !(await privileges(tc.gateway, bearer(child.accessToken)))?.includes("VIEW_TESTS"),
    );
    expect(errorOf((await tc.gateway.graphql(LIST_TESTS, {}, bearer(child.accessToken))).body)).toEqual({
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
});
