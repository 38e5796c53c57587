/**
 * DataHub's service accounts against the real gateway (HTTP, PostgreSQL, Redis): its smoke tests
 * (smoke-test/tests/service_accounts/) and its feature guide, each request as DataHub's code builds it
 * (fixtures/datahub/, with the DataHub path of each text).
 */
import { bearer, grant, startGateway, type Harness } from "./support/gateway-harness";
import { frontendProxyHeaders } from "./fixtures/datahub/requests";
import {
  GUIDE_CREATE_VARIABLES,
  GUIDE_LIST_VARIABLES,
  guideTokenVariables,
  SMOKE_NONEXISTENT_SERVICE_ACCOUNTS,
  SMOKE_SERVICE_ACCOUNT,
  smokeServiceAccountCreateVariables,
  smokeServiceAccountListVariables,
  smokeServiceAccountTokenVariables,
} from "./fixtures/datahub/requests-service-accounts";
import { SMOKE_SA, GUIDE_SA, ALICE, SYSTEM_ID, SYSTEM_SECRET } from "./support/datahub-clients";

describe("DataHub's clients, unchanged", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    await grant(h, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
  });
  afterAll(() => h.close());

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
});
