/**
 * A token's chain (docs/authorization.md), over real HTTP, PostgreSQL and Redis: a token expires no later than the
 * token it was minted with, and stops working, on every replica within 1 s, when that token is revoked; chains are
 * bounded in depth; the built-in policy's principals (no token for the system actor, root's only by root); the system
 * client naming no user acts as the system actor.
 */
import { MAX_TOKEN_CHAIN_DEPTH, SYSTEM_ACTOR_URN } from "@mdp/core";
import { ROOT, bearer, grant, mintToken, systemClientHeaders } from "./support/gateway-harness";
import { ME, Created, msUntil, idOf } from "./support/token-chains";
import { startTokenChainsHarness } from "./support/token-chains-harness";

describe("a token's chain", () => {
  const tc = startTokenChainsHarness();
  const { asRoot, create, mint } = tc;

  describe("a token does not outlive the token it was minted with", () => {
    const USER = "urn:li:corpuser:c-user";
    beforeAll(() => grant(tc.gateway, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]));

    it.each(["ONE_YEAR", "ONE_DAY", "NO_EXPIRY"])(
      "refuses a %s token minted with a one-hour scoped token: 400 naming input.duration and when the parent expires",
      async (duration) => {
        const parent = await mint(asRoot, USER, {
          duration: "ONE_HOUR",
          scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"],
        });
        const before = await tc.gateway.prisma.accessToken.count();
        const { created, error } = await create(bearer(parent.accessToken), USER, { duration });
        expect(created).toBeUndefined();
        expect(error).toEqual({
          code: "BAD_USER_INPUT",
          message:
            `input.duration ${duration} would outlive the access token in use, which expires at ` +
            `${new Date(parent.metadata.expiresAt!).toISOString()}: a token created with another may not expire ` +
            `after it; choose a shorter duration, or create it with a longer-lived token`,
        });
        expect(await tc.gateway.prisma.accessToken.count()).toBe(before);
      },
    );

    it("mints one that ends within the parent's life, and records the parent", async () => {
      const parent = await mint(asRoot, USER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER, { duration: "ONE_HOUR" });
      expect(child.metadata.parentTokenId).toBe(parent.metadata.id);
      expect(child.metadata.expiresAt!).toBeLessThanOrEqual(parent.metadata.expiresAt!);
      const listed = await tc.gateway.graphql(
        `{ listAccessTokens(input: {filters: [{field: "id", value: "${child.metadata.id}"}]}) { tokens { parentTokenId } } }`,
        {},
        asRoot,
      );
      expect(listed.body.data).toEqual({ listAccessTokens: { tokens: [{ parentTokenId: parent.metadata.id }] } });
      const audit = await tc.gateway.prisma.auditEvent.findFirstOrThrow({
        where: { action: "accessToken.create", targetUrn: `urn:li:dataHubAccessToken:${child.metadata.id}` },
      });
      expect(audit.details).toMatchObject({ parentTokenId: parent.metadata.id, via: "token" });
    });

    it("refuses a child whose parent is revoked, on both replicas within 1 s", async () => {
      const parent = await mint(asRoot, USER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER);
      // Both replicas verify (and cache) the child and its parent.
      for (const on of [tc.gateway, tc.replica])
        expect((await on.graphql(ME, {}, bearer(child.accessToken))).status).toBe(200);

      const startedAt = Date.now();
      const revoked = await tc.gateway.graphql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        {
          t: parent.metadata.id,
        },
        asRoot,
      );
      expect(revoked.body.data).toEqual({ revokeAccessToken: true });
      const ms = await msUntil(startedAt, async () => {
        const answers = await Promise.all(
          [tc.gateway, tc.replica].map((on) => on.graphql(ME, {}, bearer(child.accessToken))),
        );
        return answers.every((r) => r.status === 401);
      });
      expect(ms).toBeLessThan(1000);
      const refused = await tc.replica.graphql(ME, {}, bearer(child.accessToken));
      expect(refused.body.errors?.[0]?.message).toBe(
        `Token has been revoked: the access token it was created with (${parent.metadata.id}) is revoked.`,
      );
      // Counted as a revocation.
      const metrics = await (await fetch(`${tc.replica.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/mdp_token_verifications_total\{result="refused",reason="revoked"\} [1-9]/);
    });

    it("refuses a child whose parent's user had all tokens revoked, on both replicas within 1 s", async () => {
      const MANAGER = "urn:li:corpuser:c-manager";
      await grant(tc.gateway, MANAGER, ["MANAGE_ACCESS_TOKENS", "GET_ENTITY"]);
      const parent = await mint(asRoot, MANAGER, { duration: "ONE_DAY" });
      const child = await mint(bearer(parent.accessToken), USER); // another user's token: not revoked by the call
      for (const on of [tc.gateway, tc.replica])
        expect((await on.graphql(ME, {}, bearer(child.accessToken))).status).toBe(200);

      const startedAt = Date.now();
      const res = await tc.gateway.graphql(
        `mutation($a: String!) { revokeAccessTokens(actorUrn: $a) }`,
        { a: MANAGER },
        asRoot,
      );
      expect(res.body.data).toEqual({ revokeAccessTokens: 1 });
      const ms = await msUntil(startedAt, async () => {
        const answers = await Promise.all(
          [tc.gateway, tc.replica].map((on) => on.graphql(ME, {}, bearer(child.accessToken))),
        );
        return answers.every((r) => r.status === 401);
      });
      expect(ms).toBeLessThan(1000);
    });

    it("refuses a child whose parent expired (a row made so: minting never lets a child outlive its parent)", async () => {
      const expired = await mintToken(tc.gateway, USER, Math.floor(Date.now() / 1000) - 60);
      const parentId = idOf(expired);
      const child = await mint(asRoot, USER);
      await tc.gateway.prisma.accessToken.update({
        where: { id: child.metadata.id },
        data: { parentTokenId: parentId },
      });
      const refused = await tc.gateway.graphql(ME, {}, bearer(child.accessToken));
      expect(refused.status).toBe(401);
      expect(refused.body.errors?.[0]?.message).toBe(
        `Token has been revoked: the access token it was created with (${parentId}) has expired.`,
      );
    });
  });

  describe(`chains of at most ${MAX_TOKEN_CHAIN_DEPTH} tokens`, () => {
    const USER = "urn:li:corpuser:depth-user";
    beforeAll(() => grant(tc.gateway, USER, ["GENERATE_PERSONAL_ACCESS_TOKENS"]));

    it(`the ${MAX_TOKEN_CHAIN_DEPTH}th token of a chain cannot create another (400 naming the limit)`, async () => {
      let token = await mint(asRoot, USER, { duration: "NO_EXPIRY" });
      for (let i = 1; i < MAX_TOKEN_CHAIN_DEPTH; i++) {
        token = await mint(bearer(token.accessToken), USER, { duration: "NO_EXPIRY" });
      }
      expect((await tc.gateway.graphql(ME, {}, bearer(token.accessToken))).status).toBe(200);
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
      await tc.gateway.prisma.accessToken.update({
        where: { id: first.metadata.id },
        data: { parentTokenId: second.metadata.id },
      });
      await tc.gateway.prisma.accessToken.update({
        where: { id: second.metadata.id },
        data: { parentTokenId: first.metadata.id },
      });
      const res = await tc.gateway.graphql(ME, {}, bearer(first.accessToken));
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.message).toBe("Unable to verify the provided token.");
    });
  });

  describe("the principals of the built-in policy: no token for the system actor, root's only by root", () => {
    const HOLDER = "urn:li:corpuser:p-holder"; // MANAGE_ACCESS_TOKENS (and so GENERATE_PERSONAL_ACCESS_TOKENS) only
    const scoped = { scopes: ["MANAGE_ACCESS_TOKENS"] }; // privileges the holder holds, so no other check refuses
    let holderToken: Created;
    const basicRaw = { authorization: systemClientHeaders(ROOT).authorization! };
    const tokensFor = (actorUrn: string) => tc.gateway.prisma.accessToken.count({ where: { actorUrn } });
    const createRows = (actorUrn: string) =>
      tc.gateway.prisma.auditEvent.count({
        where: { action: "accessToken.create", details: { path: ["actorUrn"], equals: actorUrn } },
      });

    beforeAll(async () => {
      await grant(tc.gateway, HOLDER, ["MANAGE_ACCESS_TOKENS"]);
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
      const earlier = await mintToken(tc.gateway, SYSTEM_ACTOR_URN, Math.floor(Date.now() / 1000) + 3600);
      const res = await tc.gateway.graphql(`{ me { urn } }`, {}, bearer(earlier));
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
      expect((await tc.gateway.graphql(`{ me { urn } }`, {}, basicRaw)).body).toEqual({
        data: { me: { urn: SYSTEM_ACTOR_URN } },
      });
      const USER = "urn:li:corpuser:e-user";
      const created = await mint(basicRaw, USER);
      expect(created.metadata).toMatchObject({ ownerUrn: SYSTEM_ACTOR_URN, parentTokenId: null });
      const revoked = await tc.gateway.graphql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: created.metadata.id },
        basicRaw,
      );
      expect(revoked.body.data).toEqual({ revokeAccessToken: true });
      const rows = await tc.gateway.prisma.auditEvent.findMany({
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
      const res = await tc.gateway.graphql(
        `{ me { urn } }`,
        {},
        { ...basicRaw, "x-datahub-actor": "urn:li:corpuser:e-other" },
      );
      expect(res.body).toEqual({ data: { me: { urn: "urn:li:corpuser:e-other" } } });
    });
  });
});
