/**
 * DataHub's own clients against the real gateway (HTTP, PostgreSQL, Redis, a BullMQ truncation worker): the web
 * app's token documents, datahub-gc's expired-token cleanup and truncations, and the Python SDK's connection check and
 * GraphQL calls, each request as DataHub's code builds it (fixtures/datahub/, with the DataHub path of each text).
 */
import { stripIgnoredCharacters } from "graphql";
import { SYSTEM_ACTOR_URN } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  mintToken,
  startGateway,
  startTruncationWorker,
  type Harness,
} from "./support/gateway-harness";
import {
  GC_TRUNCATE_PATH,
  GC_TRUNCATIONS,
  SDK_CONFIG_PATH,
  SDK_GRAPHQL_PATH,
  SDK_SESSION_HEADERS,
  gcExpiredTokensVariables,
  gcTruncatePayload,
  gcTruncateRetryPayload,
  frontendProxyHeaders,
  SMOKE_SUITE_FILTER,
  SMOKE_TOKEN_NAME,
  SMOKE_UNAUTHORIZED_MESSAGE,
  SMOKE_USER_URN,
  sdkBearer,
  sdkSystemAuth,
  webAppCreateInput,
  webAppOwnTokensVariables,
  webAppV2Filters,
  smokeCreateVariables,
  smokeListVariables,
  GUIDE_CREATE_VARIABLES,
  GUIDE_LIST_VARIABLES,
  guideTokenVariables,
  SMOKE_NONEXISTENT_SERVICE_ACCOUNTS,
  SMOKE_SERVICE_ACCOUNT,
  smokeServiceAccountCreateVariables,
  smokeServiceAccountListVariables,
  smokeServiceAccountTokenVariables,
} from "./fixtures/datahub/requests";
import { printedOperations, verbatimOperations } from "./fixtures/datahub/operations";

const WEB = printedOperations("auth.graphql");
const GC = printedOperations("datahub-gc.graphql");

const SMOKE = verbatimOperations("smoke-tokens.graphql");
const SMOKE_SA = verbatimOperations("smoke-service-accounts.graphql");
const GUIDE_SA = verbatimOperations("service-accounts-guide.graphql");

const ALICE = "urn:li:corpuser:alice";
const BOB = "urn:li:corpuser:bob";
const SYSTEM_ID = "__datahub_system";
const SYSTEM_SECRET = "development-system-client-secret";

interface TokenRow {
  id: string;
  type: string;
  name: string;
  ownerUrn: string;
  expiresAt: number | null;
}
interface TokenList {
  total: number;
  tokens: TokenRow[];
}
/** What the SDK reads of an answer: an operation's `value`, an HTTP error's `message`, GraphQL's `data`. */
interface SdkAnswer {
  value?: unknown;
  message?: string;
  data?: { listAccessTokens: TokenList } | null;
  errors?: unknown[];
}

describe("DataHub's clients, unchanged", () => {
  let h: Harness;
  let alice: string;
  /** POST as DataHub's Python SDK does: its session headers, the JSON body, to `{gms}` + path. */
  const sdkPost = async (gms: string, p: string, body: unknown, auth: Record<string, string>) => {
    const res = await fetch(`${h.baseUrl}${gms}${p}`, {
      method: "POST",
      headers: { ...SDK_SESSION_HEADERS, ...auth },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as SdkAnswer };
  };
  /** DataHubGraph.execute_graphql: the minified document and its variables to {gms}/api/graphql. */
  const executeGraphql = (gms: string, query: string, variables: unknown, auth: Record<string, string>) =>
    sdkPost(gms, SDK_GRAPHQL_PATH, { query: stripIgnoredCharacters(query), variables }, auth);
  const web = (name: string, variables: Record<string, unknown>, token = alice) =>
    h.graphql(WEB[name]!, variables, bearer(token));

  beforeAll(async () => {
    h = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    await grant(h, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    // Never expiring: the web app's documents below create tokens with it (the web app itself goes through the
    // frontend's system client), and a token created with a token may not outlive it.
    alice = (await createToken(h, ALICE, undefined, { duration: "NO_EXPIRY" })).token;
  });
  afterAll(() => h.close());

  describe("the web app's token page (auth.graphql, settings/ and settingsV2/)", () => {
    it("creates a token with CreateAccessTokenInput, an empty description included, and lists it with type", async () => {
      const created = await web("createAccessToken", { input: webAppCreateInput(ALICE, "laptop") });
      expect(created.status).toBe(200);
      expect(created.body.errors).toBeUndefined();
      expect((created.body.data!.createAccessToken as { accessToken: string }).accessToken.split(".")).toHaveLength(3);

      const own = await web("listAccessTokens", webAppOwnTokensVariables(ALICE));
      expect(own.body.errors).toBeUndefined();
      const list = own.body.data!.listAccessTokens as TokenList;
      expect(list.tokens.find((t) => t.name === "laptop")).toMatchObject({ type: "ACCESS_TOKEN", ownerUrn: ALICE });

      const v2 = await web("listAccessTokens", { input: { start: 0, count: 10, filters: webAppV2Filters.own(ALICE) } });
      expect((v2.body.data!.listAccessTokens as TokenList).total).toBe(list.total);
    });

    it("answers the deprecated getAccessToken with a token that is stored, listed and revocable", async () => {
      const res = await web("getAccessToken", { input: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_HOUR" } });
      expect(res.body.errors).toBeUndefined();
      const token = (res.body.data!.getAccessToken as { accessToken: string }).accessToken;
      const me = await h.graphql("{ me { urn } }", {}, bearer(token));
      expect(me.body.data).toEqual({ me: { urn: ALICE } });
      const listed = await web("listAccessTokens", {
        input: {
          start: 0,
          count: 10,
          filters: [...webAppV2Filters.own(ALICE), { field: "name", values: ["getAccessToken"], condition: "EQUAL" }],
        },
      });
      const [row] = (listed.body.data!.listAccessTokens as TokenList).tokens;
      expect(row).toMatchObject({ name: "getAccessToken" });
      expect((await web("revokeAccessToken", { tokenId: row!.id })).body.data).toEqual({ revokeAccessToken: true });
      expect((await h.graphql("{ me { urn } }", {}, bearer(token))).status).toBe(401);
    });

    it("lists only the caller's expired tokens under the EXPIRED status, and nothing else without MANAGE_ACCESS_TOKENS", async () => {
      const expired = await mintToken(h, ALICE, Math.floor(Date.now() / 1000) - 60);
      expect(expired).toBeTruthy();
      const now = Date.now();
      const res = await web("listAccessTokens", {
        input: { start: 0, count: 10, filters: [...webAppV2Filters.own(ALICE), webAppV2Filters.expired(now)] },
      });
      const list = res.body.data!.listAccessTokens as TokenList;
      expect(list.total).toBe(1);
      expect(list.tokens[0]!.expiresAt).toBeLessThan(now);

      // A manager's "all" and "by owner" lists need MANAGE_ACCESS_TOKENS; a negated filter on yourself is not "yours".
      for (const filters of [
        webAppV2Filters.all(),
        webAppV2Filters.byOwner(BOB),
        [{ field: "ownerUrn", values: [ALICE], negated: true }],
      ]) {
        const refused = await web("listAccessTokens", { input: { start: 0, count: 10, filters } });
        expect(refused.body.errors?.[0]?.extensions).toMatchObject({
          code: "FORBIDDEN",
          type: "UNAUTHORIZED",
          datahubCode: 403,
        });
      }
    });

    it("lets a token manager list all tokens and by owner", async () => {
      const bobToken = (await createToken(h, BOB)).token;
      await grant(h, BOB, ["MANAGE_ACCESS_TOKENS"]);
      const all = await web(
        "listAccessTokens",
        { input: { start: 0, count: 10, filters: webAppV2Filters.all() } },
        bobToken,
      );
      const byAlice = await web(
        "listAccessTokens",
        { input: { start: 0, count: 10, filters: webAppV2Filters.byOwner(ALICE) } },
        bobToken,
      );
      expect(all.body.errors).toBeUndefined();
      expect((byAlice.body.data!.listAccessTokens as TokenList).tokens.every((t) => t.ownerUrn === ALICE)).toBe(true);
      expect((all.body.data!.listAccessTokens as TokenList).total).toBeGreaterThan(
        (byAlice.body.data!.listAccessTokens as TokenList).total,
      );
    });

    it("still refuses what it does not know: a condition a field does not take, an unknown input field", async () => {
      const contains = await web("listAccessTokens", {
        input: { filters: [{ field: "name", values: ["lap"], condition: "CONTAIN" }] },
      });
      expect(contains.status).toBe(200);
      expect(contains.body.errors?.[0]?.message).toContain(
        "input.filters[0].condition CONTAIN is not accepted on name",
      );
      const unknown = await web("listAccessTokens", {
        input: { filters: [{ field: "name", values: ["x"], fuzzy: true }] },
      });
      expect(unknown.status).toBe(200); // GraphQL over HTTP: application/json answers a refused request with 200
      expect(unknown.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining('"fuzzy" is not defined'),
        extensions: { code: "BAD_USER_INPUT", type: "BAD_REQUEST", datahubCode: 400 },
      });
      const strict = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...bearer(alice) },
        body: JSON.stringify({ query: "{ listAccessTokens(input: {}) { nope } }" }),
      });
      expect(strict.status).toBe(400); // a client that asks for the newer media type keeps the 4xx
    });
  });

  describe("the newest web app (settingsV2/AccessTokens.tsx, CreateTokenModal.tsx)", () => {
    // AccessTokens.tsx reads token.owner (urn, editableProperties.pictureLink, and what getDisplayName reads of a
    // CorpUser); the auth.graphql selecting it was not in the index we read, so this selection is written from it.
    const LIST_WITH_OWNER = `query listAccessTokens($input: ListAccessTokenInput!) {
      listAccessTokens(input: $input) { total tokens { id ownerUrn owner { urn type username
        properties { displayName fullName email } editableProperties { displayName pictureLink } info { displayName } } } }
    }`;

    it("answers token.owner as a CorpUser: urn, type and username from the urn, no profile held so the rest null", async () => {
      const res = await h.graphql(LIST_WITH_OWNER, webAppOwnTokensVariables(ALICE), bearer(alice));
      expect(res.body.errors).toBeUndefined();
      const [token] = (res.body.data!.listAccessTokens as { tokens: Array<Record<string, unknown>> }).tokens;
      expect(token!.owner).toEqual({
        urn: ALICE,
        type: "CORP_USER",
        username: "alice",
        properties: null,
        editableProperties: null,
        info: null,
      });
      const unknown = await h.graphql(
        "query { listAccessTokens(input: {}) { tokens { owner { urn groups } } } }",
        {},
        bearer(alice),
      );
      expect(unknown.body.errors?.[0]?.message).toContain('Cannot query field "groups" on type "CorpUser"');
    });

    it("refuses CreateTokenModal's SERVICE_ACCOUNT type to a user without MANAGE_SERVICE_ACCOUNTS, creating nothing", async () => {
      // CreateTokenModal.tsx: { actorUrn, type: tokenType, duration, name, description: tokenDescription || undefined }
      const before = await web("listAccessTokens", webAppOwnTokensVariables(ALICE));
      const res = await web("createAccessToken", {
        input: { actorUrn: ALICE, type: "SERVICE_ACCOUNT", duration: "ONE_MONTH", name: "robot" },
      });
      expect(res.status).toBe(200);
      expect(res.body.errors?.[0]).toMatchObject({
        message: "urn:li:corpuser:alice is unauthorized to generate access tokens for service accounts.",
        extensions: { code: "FORBIDDEN" },
      });
      const after = await web("listAccessTokens", webAppOwnTokensVariables(ALICE));
      expect((after.body.data!.listAccessTokens as TokenList).total).toBe(
        (before.body.data!.listAccessTokens as TokenList).total,
      );
    });
  });

  describe("DataHub's smoke tests of tokens (smoke-test/tests/tokens/), through the frontend's proxy", () => {
    interface SmokeToken {
      id: string;
      urn: string;
      actorUrn: string;
      ownerUrn: string;
    }
    interface SmokeAnswer {
      data?: {
        createAccessToken?: { accessToken: string; metadata: SmokeToken & { name: string } };
        listAccessTokens?: { start: number; count: number; total: number; tokens: SmokeToken[] };
        revokeAccessToken?: boolean;
        getAccessTokenMetadata?: SmokeToken;
      } | null;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    }
    /** session.post(f"{frontend}/api/v2/graphql", json=…) as the frontend forwards it to GMS /api/graphql. */
    const asSignedIn = async (user: string, name: string, variables: unknown) => {
      const res = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: frontendProxyHeaders(SYSTEM_ID, SYSTEM_SECRET, user),
        body: JSON.stringify({ query: SMOKE[name], variables }),
      });
      expect(res.status).toBe(200); // response.raise_for_status()
      return (await res.json()) as SmokeAnswer;
    };
    const list = (user: string, filters: unknown[]) =>
      asSignedIn(user, "listAccessTokens", smokeListVariables(filters)).then((r) => {
        expect(r.errors).toBeUndefined();
        return r.data!.listAccessTokens!;
      });
    const create = async (user: string, actorUrn: string) => {
      const res = await asSignedIn(user, "createAccessToken", smokeCreateVariables(actorUrn));
      expect(res.errors).toBeUndefined(); // assert_graphql_mutation_succeeded
      expect(res.data!.createAccessToken!.accessToken).toBeTruthy();
      expect(res.data!.createAccessToken!.metadata).toMatchObject({ actorUrn, name: SMOKE_TOKEN_NAME });
      return res.data!.createAccessToken!;
    };
    const revoke = async (user: string, tokenId: string) =>
      expect((await asSignedIn(user, "revokeAccessToken", { tokenId })).data).toEqual({ revokeAccessToken: true });
    const ownSuiteFilter = [{ field: "ownerUrn", values: [SMOKE_USER_URN] }, ...SMOKE_SUITE_FILTER];

    beforeAll(() => grant(h, SMOKE_USER_URN, ["GENERATE_PERSONAL_ACCESS_TOKENS"]));

    it("test_admin_can_create_list_and_revoke_tokens (and reads the token's metadata back)", async () => {
      expect((await list(ROOT, SMOKE_SUITE_FILTER)).tokens).toHaveLength(0);
      const created = await create(ROOT, ROOT);
      const metadata = await asSignedIn(ROOT, "getAccessTokenMetadata", { token: created.accessToken });
      expect(metadata.data!.getAccessTokenMetadata).toEqual({
        id: created.metadata.id,
        ownerUrn: ROOT,
        actorUrn: ROOT,
      });
      const listed = await list(ROOT, SMOKE_SUITE_FILTER);
      expect(listed.tokens).toHaveLength(1);
      expect(listed.tokens[0]).toMatchObject({ actorUrn: ROOT, ownerUrn: ROOT });
      await revoke(ROOT, created.metadata.id);
      expect((await list(ROOT, SMOKE_SUITE_FILTER)).tokens).toHaveLength(0);
    });

    it("test_admin_can_create_and_revoke_tokens_for_other_user: the admin owns what it creates for the user", async () => {
      const created = await create(ROOT, SMOKE_USER_URN);
      const listed = await list(ROOT, SMOKE_SUITE_FILTER);
      expect(listed.tokens).toHaveLength(1);
      expect(listed.tokens[0]).toMatchObject({ actorUrn: SMOKE_USER_URN, ownerUrn: ROOT });
      await revoke(ROOT, created.metadata.id);
      expect((await list(ROOT, SMOKE_SUITE_FILTER)).tokens).toHaveLength(0);
    });

    it("test_non_admin_can_create_list_revoke_tokens: its own, filtered by ownerUrn", async () => {
      const created = await create(SMOKE_USER_URN, SMOKE_USER_URN);
      const listed = await list(SMOKE_USER_URN, ownSuiteFilter);
      expect(listed.tokens).toEqual([
        expect.objectContaining({ id: created.metadata.id, actorUrn: SMOKE_USER_URN, ownerUrn: SMOKE_USER_URN }),
      ]);
      await revoke(SMOKE_USER_URN, created.metadata.id);
      expect((await list(SMOKE_USER_URN, ownSuiteFilter)).tokens).toHaveLength(0);
      expect((await h.graphql("{ me { urn } }", {}, bearer(created.accessToken))).status).toBe(401);
    });

    it("test_admin_can_manage_tokens_generated_by_other_user: lists and revokes the user's token", async () => {
      const created = await create(SMOKE_USER_URN, SMOKE_USER_URN);
      expect(created.metadata.ownerUrn).toBe(SMOKE_USER_URN);
      const listed = await list(ROOT, ownSuiteFilter);
      expect(listed.tokens).toEqual([
        expect.objectContaining({ id: created.metadata.id, actorUrn: SMOKE_USER_URN, ownerUrn: SMOKE_USER_URN }),
      ]);
      await revoke(ROOT, created.metadata.id);
      expect((await list(SMOKE_USER_URN, ownSuiteFilter)).tokens).toHaveLength(0);
      expect((await list(ROOT, ownSuiteFilter)).tokens).toHaveLength(0);
    });

    it("test_non_admin_can_not_generate_tokens_for_others: refused with errors[] (our message names who and what)", async () => {
      const res = await asSignedIn(SMOKE_USER_URN, "createAccessToken", smokeCreateVariables(ROOT));
      expect(res.data?.createAccessToken ?? null).toBeNull();
      const [error] = res.errors!;
      // DataHub's test compares the message with its fixed sentence; ours names the caller and the refused act
      // (docs/datahub-clients.md); both carry DataHub's 403 and UNAUTHORIZED.
      expect(error!.message).not.toBe(SMOKE_UNAUTHORIZED_MESSAGE);
      expect(error!.message).toBe(`${SMOKE_USER_URN} is unauthorized to generate access tokens for other users.`);
      expect(error!.extensions).toMatchObject({ code: "FORBIDDEN", type: "UNAUTHORIZED", datahubCode: 403 });
      // nor may it list tokens that are not its own
      const others = await asSignedIn(SMOKE_USER_URN, "listAccessTokens", smokeListVariables(SMOKE_SUITE_FILTER));
      expect(others.errors?.[0]?.extensions).toMatchObject({ code: "FORBIDDEN", datahubCode: 403 });
      expect((await list(ROOT, SMOKE_SUITE_FILTER)).total).toBe(0);
    });
  });

  describe("DataHub's service accounts: its smoke tests (smoke-test/tests/service_accounts/) and feature guide", () => {
    const ADMIN = "urn:li:corpuser:datahub";
    interface Account {
      urn: string;
      type?: string;
      name: string;
      displayName: string | null;
      description: string | null;
      createdBy: string;
      createdAt: number;
      updatedAt?: number;
    }
    interface Answer {
      data?: Record<string, unknown> | null;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    }
    /** session.post(f"{frontend}/api/v2/graphql", json=…) as the frontend forwards it, signed in as the admin. */
    const post = async (document: string, variables: unknown, user = ADMIN) => {
      const res = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: frontendProxyHeaders(SYSTEM_ID, SYSTEM_SECRET, user),
        body: JSON.stringify({ query: document, variables }),
      });
      expect(res.status).toBe(200); // response.raise_for_status()
      return (await res.json()) as Answer;
    };
    const total = async () => {
      const listed = await post(SMOKE_SA.listServiceAccounts!, smokeServiceAccountListVariables());
      expect(listed.errors).toBeUndefined();
      return (listed.data!.listServiceAccounts as { total: number }).total;
    };

    beforeAll(() => grant(h, ADMIN, ["MANAGE_SERVICE_ACCOUNTS", "MANAGE_ACCESS_TOKENS"]));

    it("test_create_list_get_delete_service_account: the whole life of an account, as the test asserts it", async () => {
      const before = await total();
      const { displayName, description } = SMOKE_SERVICE_ACCOUNT;
      const created = await post(
        SMOKE_SA.createServiceAccount!,
        smokeServiceAccountCreateVariables(displayName, description),
      );
      expect(created.errors).toBeUndefined();
      const account = created.data!.createServiceAccount as Account;
      expect(account).toEqual({
        urn: expect.stringMatching(
          /^urn:li:corpuser:service_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        ),
        type: "CORP_USER",
        name: account.urn.slice("urn:li:corpuser:".length),
        displayName,
        description,
        createdBy: ADMIN,
        createdAt: expect.any(Number),
      });
      expect(await total()).toBe(before + 1);

      const fetched = await post(SMOKE_SA.getServiceAccount!, { urn: account.urn });
      expect(fetched.errors).toBeUndefined();
      expect(fetched.data!.getServiceAccount).toEqual({ ...account, updatedAt: account.createdAt });

      const deleted = await post(SMOKE_SA.deleteServiceAccount!, { urn: account.urn });
      expect(deleted).toEqual({ data: { deleteServiceAccount: true } });
      expect(await total()).toBe(before);
      expect((await post(SMOKE_SA.getServiceAccount!, { urn: account.urn })).data).toEqual({ getServiceAccount: null });
    });

    it("test_create_access_token_for_service_account: mints, answers the metadata, revokes; the token acts as the account", async () => {
      const created = await post(
        SMOKE_SA.createServiceAccount!,
        smokeServiceAccountCreateVariables("Token Test Service Account", "Service account for testing token creation"),
      );
      const urn = (created.data!.createServiceAccount as Account).urn;
      const minted = await post(
        SMOKE_SA.createAccessToken!,
        smokeServiceAccountTokenVariables(urn, "test-service-account-token"),
      );
      expect(minted.errors).toBeUndefined();
      const token = minted.data!.createAccessToken as {
        accessToken: string;
        metadata: { id: string; actorUrn: string; ownerUrn: string; name: string; description: string | null };
      };
      expect(token.metadata).toEqual({
        id: expect.any(String),
        actorUrn: urn,
        ownerUrn: ADMIN,
        name: "test-service-account-token",
        description: null,
      });
      expect((await h.graphql("{ me { urn } }", {}, bearer(token.accessToken))).body.data).toEqual({ me: { urn } });

      const revoked = await post(SMOKE_SA.revokeAccessToken!, { tokenId: token.metadata.id });
      expect(revoked).toEqual({ data: { revokeAccessToken: true } });
      expect((await h.graphql("{ me { urn } }", {}, bearer(token.accessToken))).status).toBe(401);
      expect((await post(SMOKE_SA.deleteServiceAccount!, { urn })).errors).toBeUndefined();
    });

    it("test_get_nonexistent_service_account and test_delete_nonexistent_service_account: null, and an error", async () => {
      const [missing, toDelete] = SMOKE_NONEXISTENT_SERVICE_ACCOUNTS as [string, string];
      expect(await post(SMOKE_SA.getServiceAccount!, { urn: missing })).toEqual({ data: { getServiceAccount: null } });
      const deleted = await post(SMOKE_SA.deleteServiceAccount!, { urn: toDelete });
      expect(deleted.errors?.[0]).toMatchObject({
        message: `Service account ${toDelete} does not exist`,
        extensions: { code: "NOT_FOUND" },
      });
    });

    it("test_list_service_accounts_with_query: the account is listed with its display name", async () => {
      const created = await post(
        SMOKE_SA.createServiceAccount!,
        smokeServiceAccountCreateVariables("Test List Service Account"),
      );
      const account = created.data!.createServiceAccount as Account;
      expect(account.description).toBeNull();
      const listed = await post(SMOKE_SA.listServiceAccounts!, smokeServiceAccountListVariables());
      const found = (listed.data!.listServiceAccounts as { serviceAccounts: Account[] }).serviceAccounts.filter(
        (a) => a.urn === account.urn,
      );
      expect(found).toEqual([expect.objectContaining({ displayName: "Test List Service Account" })]);
      const byQuery = await post(SMOKE_SA.listServiceAccounts!, smokeServiceAccountListVariables("test list SERVICE"));
      expect(
        (byQuery.data!.listServiceAccounts as { serviceAccounts: Account[] }).serviceAccounts.map((a) => a.urn),
      ).toEqual([account.urn]);
      await post(SMOKE_SA.deleteServiceAccount!, { urn: account.urn });
    });

    it("answers the feature guide's documents with its variables, and its ONE_YEAR token", async () => {
      const created = await post(SMOKE_SA.createServiceAccount!, GUIDE_CREATE_VARIABLES);
      const account = created.data!.createServiceAccount as Account;
      expect(account).toMatchObject(GUIDE_CREATE_VARIABLES.input);
      const listed = await post(GUIDE_SA.listServiceAccounts!, GUIDE_LIST_VARIABLES);
      expect(listed.errors).toBeUndefined();
      expect((listed.data!.listServiceAccounts as { serviceAccounts: Account[] }).serviceAccounts).toContainEqual({
        urn: account.urn,
        name: account.name,
        ...GUIDE_CREATE_VARIABLES.input,
        createdBy: ADMIN,
        createdAt: account.createdAt,
        updatedAt: account.createdAt,
      });
      const fetched = await post(GUIDE_SA.getServiceAccount!, { urn: account.urn });
      expect(fetched.data!.getServiceAccount).toMatchObject({ urn: account.urn, createdBy: ADMIN });
      const minted = await post(SMOKE_SA.createAccessToken!, guideTokenVariables(account.urn));
      expect(minted.errors).toBeUndefined();
      const { accessToken } = minted.data!.createAccessToken as { accessToken: string };
      expect((await h.graphql("{ me { urn } }", {}, bearer(accessToken))).body.data).toEqual({
        me: { urn: account.urn },
      });
      // "Deleting a service account will immediately invalidate all access tokens associated with it."
      expect(await post(SMOKE_SA.deleteServiceAccount!, { urn: account.urn })).toEqual({
        data: { deleteServiceAccount: true },
      });
      expect((await h.graphql("{ me { urn } }", {}, bearer(accessToken))).status).toBe(401);
    });
  });

  describe("the Python SDK (graph/client.py, emitter/rest_emitter.py, cli/config_utils.py)", () => {
    it.each(["/gms", "/api/gms"])(
      "passes the connection check at GET %s/config and posts GraphQL to {gms}/api/graphql",
      async (gms) => {
        const config = await fetch(`${h.baseUrl}${gms}${SDK_CONFIG_PATH}`, {
          headers: { ...SDK_SESSION_HEADERS, ...sdkBearer(alice) },
        });
        expect(config.status).toBe(200);
        const body = (await config.json()) as Record<string, unknown>;
        expect(body.noCode).toBe("true");
        expect(JSON.stringify(body)).not.toMatch(/secret|password|postgres|redis/i);

        const res = await executeGraphql(gms, WEB.listAccessTokens!, webAppOwnTokensVariables(ALICE), sdkBearer(alice));
        expect(res.status).toBe(200);
        expect(res.body.data!.listAccessTokens.total).toBeGreaterThan(0);
      },
    );

    it("authenticates the system client as DataHub sends it (Basic id:secret, not base64) with X-DataHub-Actor", async () => {
      const res = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
        "X-DataHub-Actor": ALICE,
      });
      expect(res.body).toEqual({ data: { me: { urn: ALICE } } });
      const wrong = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, "nope"),
        "X-DataHub-Actor": ALICE,
      });
      expect(wrong.status).toBe(401);
      // Naming nobody, the system client acts as the system actor, as DataHub's does.
      const noActor = await executeGraphql(
        "/gms",
        "{ me { urn } }",
        undefined,
        sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
      );
      expect(noActor.body).toEqual({ data: { me: { urn: SYSTEM_ACTOR_URN } } });
    });

    it("never lets X-DataHub-Actor make a token act for someone else", async () => {
      const res = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkBearer(alice),
        "X-DataHub-Actor": ROOT,
      });
      expect(res.status).toBe(403);
      const both = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
        "X-DataHub-Actor": ALICE,
        "X-Platform-Actor": ROOT,
      });
      expect(both.status).toBe(400);
    });
  });

  describe("datahub-gc (source/gc/datahub_gc.py)", () => {
    // As datahub-gc runs with the system client's credentials: no actor header, so it acts as the system actor.
    const gcAuth = () => sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET);

    it("revokes every expired token with its own list/revoke loop, and leaves live ones", async () => {
      const nowSeconds = Math.floor(Date.now() / 1000);
      for (let i = 0; i < 12; i++) await mintToken(h, i % 2 ? ALICE : BOB, nowSeconds - 3600 - i);
      // revoke_expired_tokens, as written: list expired, revoke each, until total is 0 (bounded here)
      let revoked = 0;
      for (let round = 0; round < 10; round++) {
        const listed = await executeGraphql(
          "/gms",
          GC.listAccessTokens!,
          gcExpiredTokensVariables(Date.now()),
          gcAuth(),
        );
        expect(listed.status).toBe(200);
        const { total, tokens } = listed.body.data!.listAccessTokens as TokenList;
        if (total === 0 || tokens.length === 0) break;
        for (const token of tokens) {
          const res = await executeGraphql("/gms", GC.revokeAccessToken!, { tokenId: token.id }, gcAuth());
          expect(res.body.data).toEqual({ revokeAccessToken: true });
          revoked++;
        }
      }
      expect(revoked).toBeGreaterThanOrEqual(12);
      const audited = await h.prisma.auditEvent.count({
        where: { action: "accessToken.revoke", actorUrn: SYSTEM_ACTOR_URN },
      });
      expect(audited).toBe(revoked);
      const after = await executeGraphql("/gms", GC.listAccessTokens!, gcExpiredTokensVariables(Date.now()), gcAuth());
      expect(after.body.data!.listAccessTokens.total).toBe(0);
      expect((await h.graphql("{ me { urn } }", {}, bearer(alice))).body.data).toEqual({ me: { urn: ALICE } });
    });

    it("truncates every aspect it names, as it spells them, and follows the dry run it parses", async () => {
      const store = new TimeseriesStore(h.database.pool);
      const worker = await startTruncationWorker(h);
      try {
        const now = Date.now();
        const cutoff = now - 30 * DAY_MILLIS; // x_days_ago_millis(truncate_index_older_than_days=30)
        const refs: TimeseriesAspectRef[] = [
          { entityType: "dataset", aspectName: "operation" },
          { entityType: "dataset", aspectName: "datasetUsageStatistics" },
          { entityType: "chart", aspectName: "chartUsageStatistics" },
          { entityType: "dashboard", aspectName: "dashboardUsageStatistics" },
          { entityType: "query", aspectName: "queryUsageStatistics" },
        ];
        for (const ref of refs) {
          const rows = [40, 35, 31, 29, 1].map((days, i) => ({
            urn: `urn:li:${ref.entityType}:r${i}`,
            timestampMillis: now - days * DAY_MILLIS,
            valueJson: "{}",
          }));
          await store.prepare([{ ...ref, rows }]);
          await inTransaction(h.database.pool, (client) => store.append(client, ref, rows));
        }
        for (const { aspect_name, entity_type } of GC_TRUNCATIONS) {
          // _truncate_timeseries_helper: first the real run, then the watched dry runs
          const run = await sdkPost(
            "/gms",
            GC_TRUNCATE_PATH,
            gcTruncatePayload(entity_type, aspect_name, cutoff, false),
            gcAuth(),
          );
          expect(run.status).toBe(200);
          const taskId = run.body.value as string;
          // operators follow it with getEsTaskStatus
          const status = await eventually(
            "getEsTaskStatus says completed",
            async () => {
              const res = await sdkPost("/gms", "/operations?action=getEsTaskStatus", { task: taskId }, gcAuth());
              expect(res.status).toBe(200);
              return JSON.parse(res.body.value as string) as { completed: boolean; status: { state: string } };
            },
            { timeoutMs: 20_000, until: (s) => s.completed },
          );
          expect(status.status.state).toBe("completed");
          // the retry it makes after an OperationalError is accepted too
          const dry = await sdkPost(
            "/gms",
            GC_TRUNCATE_PATH,
            gcTruncateRetryPayload(entity_type, aspect_name, cutoff, true),
            gcAuth(),
          );
          const value = dry.body.value as string;
          expect(value).toContain("This was a dry run");
          expect(value).toContain("out of");
          const [toDelete, total] = (value.match(/\d+/g) ?? []).slice(0, 2).map(Number);
          expect({ toDelete, total }).toEqual({ toDelete: 0, total: 2 }); // strictly older than the cutoff went
        }
        const sizes = await sdkPost("/gms", "/operations?action=getIndexSizes", {}, gcAuth());
        const query = (sizes.body.value as { indexSizes: Array<Record<string, unknown>> }).indexSizes.find(
          (s) => s.entityName === "query",
        );
        expect(query).toMatchObject({ aspectName: "queryUsageStatistics", rowCount: 2 });
        expect(query!.sizeMb).toBe(query!.sizeInMb);
      } finally {
        await worker.close();
      }
    }, 120_000);

    it("refuses an aspect spelled in lower case when no registered aspect lowercases to it, and both force flags", async () => {
      const unknown = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        gcTruncatePayload("dataset", "datasetusage", 1, true),
        gcAuth(),
      );
      expect(unknown.status).toBe(404);
      const mixed = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        gcTruncatePayload("dataset", "DatasetUsageStatistics", 1, true),
        gcAuth(),
      );
      expect(mixed.status).toBe(404); // only DataHub's lower-case index spelling is an alias, not any casing
      const both = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        { ...gcTruncateRetryPayload("dataset", "operation", 1, true), forceReindex: true },
        gcAuth(),
      );
      expect(both.status).toBe(400);
      expect(both.body.message).toContain("forceDeleteByQuery");
    });
  });
});
