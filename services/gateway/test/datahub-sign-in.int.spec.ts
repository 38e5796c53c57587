/**
 * DataHub's frontend signing a user in (generateSessionTokenForUser) and the web app's shell and settings pages under
 * that session (appConfig, getMe, the access-token and service-account pages' documents), each request as DataHub's
 * code builds it (fixtures/datahub/, each naming the DataHub file and commit it comes from), against the real gateway.
 */
import { SYSTEM_ACTOR_URN } from "@mdp/core";
import {
  bearer,
  createToken,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";
import { sdkSystemAuth, webAppOwnTokensVariables, webAppV2Filters } from "./fixtures/datahub/requests";
import {
  DATAHUB_APP_CONFIG_FIELDS,
  DATAHUB_FEATURE_FLAGS,
  DATAHUB_PLATFORM_PRIVILEGES,
  DATAHUB_SESSION_DURATION_DEFAULT_MS,
  DATAHUB_SESSION_DURATION_VARIABLE,
  FRONTEND_SESSION_PATH,
  frontendSessionBody,
  frontendSessionHeaders,
  webAppListRolesVariables,
  webAppListUsersVariables,
  webAppServiceAccountsVariables,
} from "./fixtures/datahub/requests-sign-in";
import {
  APP,
  ME,
  USERS,
  ROLES,
  AUTH,
  SMOKE_SA,
  SYSTEM_ID,
  SYSTEM_SECRET,
  ALICE,
  BOB,
} from "./support/datahub-sign-in-and-writes";

describe("DataHub's clients, round three: the SDK writes, the web app signs in", () => {
  let h: Harness;
  let alice: string;

  /** As DataHub's frontend asks GMS for a user's session (AuthServiceClient.generateSessionTokenForUser). */
  const signIn = async (
    userId: string,
    base = "",
    headers: Record<string, string> = frontendSessionHeaders(SYSTEM_ID, SYSTEM_SECRET),
  ) => {
    const res = await fetch(`${h.baseUrl}${base}${FRONTEND_SESSION_PATH}`, {
      method: "POST",
      headers,
      body: frontendSessionBody(userId),
    });
    return { status: res.status, body: (await res.json()) as { accessToken?: string; message?: string } };
  };
  const sessionOf = async (userId: string) => {
    const res = await signIn(userId);
    expect(res.status).toBe(200);
    return res.body.accessToken!;
  };
  /** The frontend's GraphQL proxy with a session: `Authorization: Bearer <session token>`. */
  const asSignedIn = (session: string, query: string, variables: Record<string, unknown> = {}) =>
    h.graphql(query, variables, bearer(session));
  const claimsOf = (token: string) =>
    JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, ALICE, [
      "INGEST_METADATA",
      "GET_ENTITY",
      "GET_TIMESERIES_ASPECT",
      "GENERATE_PERSONAL_ACCESS_TOKENS",
    ]);
    alice = (await createToken(h, ALICE)).token;
  });
  afterAll(() => h.close());

  describe("signing in as the frontend does (AuthServiceClient.generateSessionTokenForUser)", () => {
    it.each(["", "/gms"])(
      "mints a SESSION token at %s/auth/generateSessionTokenForUser that acts as the user",
      async (base) => {
        const res = await signIn("alice", base);
        expect(res.status).toBe(200);
        expect(Object.keys(res.body)).toEqual(["accessToken"]);
        const claims = claimsOf(res.body.accessToken!);
        expect(claims).toMatchObject({ sub: ALICE, type: "SESSION" });
        // DataHub's setting, its name and default
        expect(h.config[DATAHUB_SESSION_DURATION_VARIABLE]).toBe(DATAHUB_SESSION_DURATION_DEFAULT_MS);
        expect((claims.exp as number) - (claims.iat as number)).toBe(DATAHUB_SESSION_DURATION_DEFAULT_MS / 1000);
        const me = await asSignedIn(res.body.accessToken!, "{ me { urn } }");
        expect(me.body).toEqual({ data: { me: { urn: ALICE } } });
      },
    );

    it("is the system client's only: a token, even the root user's, is refused; bad input names userId", async () => {
      const root = (await createToken(h, ROOT)).token;
      expect((await signIn("alice", "", { ...bearer(root), "Content-Type": "application/json" })).status).toBe(403);
      const wrong = await signIn("alice", "", frontendSessionHeaders(SYSTEM_ID, "nope"));
      expect(wrong.status).toBe(401);
      const system = await signIn("__datahub_system");
      expect(system.status).toBe(400);
      expect(system.body.message).toContain("userId");
      const malformed = await signIn("(");
      expect(malformed.status).toBe(400);
      expect(malformed.body.message).toContain("userId");
      const missing = await fetch(`${h.baseUrl}${FRONTEND_SESSION_PATH}`, {
        method: "POST",
        headers: frontendSessionHeaders(SYSTEM_ID, SYSTEM_SECRET),
        body: "{}",
      });
      expect(missing.status).toBe(400);
      expect(((await missing.json()) as { message: string }).message).toContain("userId");
      const huge = await signIn("a".repeat(20_000));
      expect(huge.status).toBe(413);
    });

    it("never lists a session among the personal access tokens, and ends them all with revokeAccessTokens", async () => {
      const session = await sessionOf("carol");
      await grant(h, "urn:li:corpuser:carol", ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
      const own = await asSignedIn(session, AUTH.listAccessTokens!, webAppOwnTokensVariables("urn:li:corpuser:carol"));
      expect(own.body.errors).toBeUndefined();
      expect(own.body.data).toEqual({ listAccessTokens: { start: 0, count: 0, total: 0, tokens: [] } });
      const all = await h.graphql(
        AUTH.listAccessTokens!,
        { input: { start: 0, count: 1000, filters: webAppV2Filters.all() } },
        systemClientHeaders(ROOT),
      );
      const ids = (all.body.data!.listAccessTokens as { tokens: Array<{ actorUrn: string }> }).tokens.map(
        (t) => t.actorUrn,
      );
      expect(ids).not.toContain("urn:li:corpuser:carol");
      // No sign-out path of DataHub's frontend reaches GMS (CentralLogoutController drops its cookie only): ending a
      // user's sessions is revoking its tokens.
      const revoked = await asSignedIn(session, `mutation { revokeAccessTokens(actorUrn: "urn:li:corpuser:carol") }`);
      expect(revoked.body.data).toEqual({ revokeAccessTokens: 1 });
      expect((await asSignedIn(session, "{ me { urn } }")).status).toBe(401);
    });

    it("makes a token created while signed in the user's own: not bounded by the session's expiry, nor ended with it", async () => {
      const session = await sessionOf("alice");
      const created = await asSignedIn(session, AUTH.createAccessToken!, {
        input: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_MONTH", name: "laptop", description: "" },
      });
      expect(created.body.errors).toBeUndefined();
      const pat = (created.body.data!.createAccessToken as { accessToken: string }).accessToken;
      const metadata = await h.graphql(
        `query($t: String!) { getAccessTokenMetadata(token: $t) { parentTokenId expiresAt } }`,
        { t: pat },
        bearer(alice),
      );
      const { parentTokenId, expiresAt } = metadata.body.data!.getAccessTokenMetadata as {
        parentTokenId: string | null;
        expiresAt: number;
      };
      expect(parentTokenId).toBeNull();
      expect(expiresAt - Date.now()).toBeGreaterThan(29 * 86_400_000);
      // the session ends; the token created with it does not
      const sessionId = claimsOf(session).jti as string;
      expect(
        (await asSignedIn(session, `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`, { t: sessionId })).body
          .data,
      ).toEqual({ revokeAccessToken: true });
      expect((await h.graphql("{ me { urn } }", {}, bearer(pat))).body.data).toEqual({ me: { urn: ALICE } });
      // A token created with a personal access token stays bounded by it.
      const child = await h.graphql(
        AUTH.createAccessToken!,
        {
          input: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_YEAR", name: "child", description: "" },
        },
        bearer(pat),
      );
      expect(child.body.errors?.[0]?.message).toContain("would outlive the access token in use");
    });
  });

  describe("the web app's shell and settings pages, signed in", () => {
    let session: string;
    beforeAll(async () => {
      await grant(h, ALICE, ["MANAGE_ACCESS_TOKENS", "MANAGE_SERVICE_ACCOUNTS"]);
      const group = await h.graphql(
        `mutation { createGroup(input: {id: "data-eng", name: "Data engineering"}) }`,
        {},
        systemClientHeaders(ROOT),
      );
      const groupUrn = group.body.data!.createGroup as string;
      await h.graphql(
        `mutation($g: String!, $u: [String!]!) { addGroupMembers(input: {groupUrn: $g, userUrns: $u}) }`,
        { g: groupUrn, u: [ALICE] },
        systemClientHeaders(ROOT),
      );
      session = await sessionOf("alice");
    });

    it("answers app.graphql's appConfig: tokens, policies and identity management on", async () => {
      const res = await asSignedIn(session, APP.appConfig!);
      expect(res.body.errors).toBeUndefined();
      const config = res.body.data!.appConfig as Record<string, Record<string, unknown>>;
      expect(config.authConfig).toEqual({ tokenAuthEnabled: true });
      expect(config.identityManagementConfig).toEqual({ enabled: true });
      expect(config.policiesConfig).toMatchObject({ enabled: true, resourcePrivileges: [] });
      expect(config.policiesConfig!.platformPrivileges).toContainEqual({
        type: "GENERATE_PERSONAL_ACCESS_TOKENS",
        displayName: "Generate Personal Access Tokens",
        description: expect.any(String),
      });
      expect(config.featureFlags).toEqual({
        readOnlyModeEnabled: false,
        showSearchFiltersV2: false,
        showBrowseV2: false,
        showAcrylInfo: false,
        nestedDomainsEnabled: false,
      });
    });

    it("serves every field DataHub's schema gives AppConfig, its feature flags and PlatformPrivileges", async () => {
      const config = await asSignedIn(
        session,
        `{ appConfig { ${DATAHUB_APP_CONFIG_FIELDS.filter((f) => f !== "featureFlags")
          .map((f) => (f === "appVersion" ? f : `${f} { __typename }`))
          .join(" ")} featureFlags { ${DATAHUB_FEATURE_FLAGS.join(" ")} } } }`,
      );
      expect(config.body.errors).toBeUndefined();
      const flags = (config.body.data!.appConfig as { featureFlags: Record<string, boolean> }).featureFlags;
      expect(Object.keys(flags)).toHaveLength(DATAHUB_FEATURE_FLAGS.length);
      expect(flags.themeV2Enabled).toBe(true);
      const privileges = await asSignedIn(
        session,
        `{ me { platformPrivileges { ${DATAHUB_PLATFORM_PRIVILEGES.join(" ")} } } }`,
      );
      expect(privileges.body.errors).toBeUndefined();
      // Fields newer versions of the web app select (DataHub's GraphQL reference of objects)
      const newer = await asSignedIn(
        session,
        `{ me { corpUser { urn exists editableInfo { teams } settings { homePage { dismissedAnnouncementUrns } }
             properties { manager { urn } customProperties { key } } editableProperties { persona { urn } platforms { urn } } }
           platformPrivileges { manageServiceAccounts viewManageTags manageApplications manageFeatures manageHomePageTemplates } } }`,
      );
      expect(newer.body.errors).toBeUndefined();
      expect(newer.body.data!.me).toMatchObject({ corpUser: { urn: ALICE, exists: true, settings: null } });
    });

    it("answers me.graphql's getMe: the user, its groups, and what its settings pages may show", async () => {
      const res = await asSignedIn(session, ME.getMe!);
      expect(res.body.errors).toBeUndefined();
      const { corpUser, platformPrivileges } = res.body.data!.me as {
        corpUser: Record<string, unknown> & { groups: { relationships: Array<{ entity: unknown }> } };
        platformPrivileges: Record<string, boolean>;
      };
      expect(corpUser).toMatchObject({
        urn: ALICE,
        username: "alice",
        info: null,
        editableProperties: null,
        settings: null,
      });
      expect(corpUser.groups.relationships).toEqual([
        {
          entity: {
            urn: "urn:li:corpGroup:data-eng",
            name: "Data engineering",
            properties: { displayName: "Data engineering" },
          },
        },
      ]);
      expect(platformPrivileges).toMatchObject({
        generatePersonalAccessTokens: true,
        managePolicies: false,
        manageIngestion: false,
      });
      // What the token and service-account pages read of it (settingsV2/AccessTokens.tsx, ManageUsersAndGroups.tsx).
      const pages = await asSignedIn(
        session,
        `{ me { corpUser { urn username info { displayName } properties { displayName } editableProperties { pictureLink } settings { appearance { showSimplifiedHomepage } } }
           platformPrivileges { generatePersonalAccessTokens manageTokens manageServiceAccounts managePolicies manageIdentities } } }`,
      );
      expect(pages.body.data!.me).toMatchObject({
        platformPrivileges: {
          generatePersonalAccessTokens: true,
          manageTokens: true,
          manageServiceAccounts: true,
          managePolicies: false,
        },
      });
    });

    it("answers the access-token page: its tokens by DataHub's urn, and user.graphql's listUsers for its owner filter", async () => {
      const minted = await createToken(h, ALICE, systemClientHeaders(ALICE));
      const own = await asSignedIn(session, AUTH.listAccessTokens!, {
        input: { start: 0, count: 10, filters: webAppV2Filters.own(ALICE) },
      });
      expect(own.body.errors).toBeUndefined();
      const tokens = (own.body.data!.listAccessTokens as { tokens: Array<{ id: string; urn: string }> }).tokens;
      expect(tokens).toContainEqual(
        expect.objectContaining({ id: minted.id, urn: `urn:li:dataHubAccessToken:${minted.id}` }),
      );
      // the same urn as its platform event's (its CREATE, in the outbox webhooks deliver from)
      const event = await h.prisma.platformEvent.findFirst({
        where: { entityUrn: `urn:li:dataHubAccessToken:${minted.id}` },
        select: { category: true },
      });
      expect(event).toEqual({ category: "ACCESS_TOKEN" });

      const users = await asSignedIn(session, USERS.listUsers!, webAppListUsersVariables());
      expect(users.body.errors).toBeUndefined();
      const list = users.body.data!.listUsers as { total: number; users: Array<Record<string, unknown>> };
      expect(list.users).toContainEqual({
        urn: ALICE,
        username: "alice",
        isNativeUser: false,
        info: null,
        editableProperties: null,
        status: null,
        roles: { start: 0, count: 0, total: 0, relationships: [] },
      });
      const queried = await asSignedIn(session, USERS.listUsers!, webAppListUsersVariables("ALI"));
      expect((queried.body.data!.listUsers as { users: Array<{ urn: string }> }).users.map((u) => u.urn)).toEqual([
        ALICE,
      ]);
      const bob = (await createToken(h, BOB)).token;
      const refused = await h.graphql(USERS.listUsers!, webAppListUsersVariables(), bearer(bob));
      expect(refused.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    });

    it("answers the service-account page: its accounts and role.graphql's listRoles (no roles are held here)", async () => {
      const accounts = await asSignedIn(session, SMOKE_SA.listServiceAccounts!, webAppServiceAccountsVariables());
      expect(accounts.body.errors).toBeUndefined();
      const roles = await asSignedIn(session, ROLES.listRoles!, webAppListRolesVariables());
      expect(roles.body).toEqual({ data: { listRoles: { start: 0, count: 0, total: 0, roles: [] } } });
    });

    it("lets the system client act as the signed-in user alike (the frontend's older proxy)", async () => {
      const res = await h.graphql(
        ME.getMe!,
        {},
        { ...sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET), "X-DataHub-Actor": ALICE },
      );
      expect((res.body.data!.me as { corpUser: { urn: string } }).corpUser.urn).toBe(ALICE);
      const system = await h.graphql(ME.getMe!, {}, sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET));
      expect((system.body.data!.me as { corpUser: { urn: string } }).corpUser.urn).toBe(SYSTEM_ACTOR_URN);
    });
  });
});
