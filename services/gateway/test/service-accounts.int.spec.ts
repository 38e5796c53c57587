/**
 * Service accounts (docs/api.md "Service accounts") against two real gateways on one database and
 * one Redis: a service account's token acts with the account's current grants (and its chain's), never its minter's;
 * deleting the account revokes its tokens on the other replica within 1 s and suspends the work it owns; a mint that
 * races the deletion leaves no live token; the bounds of docs/limits.md. DataHub's own documents are answered in
 * datahub-service-accounts.int.spec.ts; who may call each operation, in authorization-every-operation.int.spec.ts.
 */
import { eventually } from "@mdp/core/testing";
import { ownerPrivilegesReader } from "@mdp/db";
import {
  ROOT,
  bearer,
  createToken,
  startGateway,
  systemClientHeaders,
  type GraphQLBody,
  type Harness,
} from "./support/gateway-harness";

const MANAGER = "urn:li:corpuser:sa-manager";
const ME = `{ me { urn privileges } }`;
const CREATE = `mutation($i: CreateServiceAccountInput!) { createServiceAccount(input: $i) { urn name createdBy } }`;
const DELETE = `mutation($u: String!) { deleteServiceAccount(urn: $u) }`;
const MINT = `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { accessToken metadata { id ownerUrn } } }`;
const MAX_ACCOUNTS = 12;

describe("service accounts", () => {
  let a: Harness;
  let b: Harness;
  const root = systemClientHeaders(ROOT);

  async function ok<T>(h: Harness, query: string, variables: Record<string, unknown>, headers = root): Promise<T> {
    const res = await h.graphql(query, variables, headers);
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data as T;
  }
  const grantPolicy = async (user: string, privileges: string[]) =>
    (
      await ok<{ createPolicy: string }>(a, `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: `sa ${user} ${privileges.join(",")}`, state: "ACTIVE", privileges, actors: { users: [user] } },
      })
    ).createPolicy;
  const deletePolicy = (urn: string) => ok(a, `mutation($u: String!) { deletePolicy(urn: $u) }`, { u: urn });
  const createAccount = async (displayName = "robot", headers = systemClientHeaders(MANAGER)) =>
    (await ok<{ createServiceAccount: { urn: string } }>(a, CREATE, { i: { displayName } }, headers))
      .createServiceAccount.urn;
  const mint = (h: Harness, actorUrn: string, headers = systemClientHeaders(MANAGER), type = "SERVICE_ACCOUNT") =>
    h.graphql(MINT, { i: { type, actorUrn, duration: "ONE_DAY", name: "robot token" } }, headers);
  const minted = async (actorUrn: string, headers?: Record<string, string>) => {
    const res = await mint(a, actorUrn, headers);
    const token = res.body.data?.createAccessToken as {
      accessToken: string;
      metadata: { id: string; ownerUrn: string };
    };
    if (!token) throw new Error(JSON.stringify(res.body.errors));
    return token;
  };
  const privileges = async (h: Harness, token: string) => {
    const res = await h.graphql(ME, {}, bearer(token));
    return res.status === 200 ? (res.body.data!.me as { privileges: string[] }).privileges : res.status;
  };
  const refusal = (body: GraphQLBody) => ({
    code: body.errors?.[0]?.extensions?.code,
    message: body.errors?.[0]?.message,
  });

  beforeAll(async () => {
    a = await startGateway({ MAX_SERVICE_ACCOUNTS: String(MAX_ACCOUNTS) });
    b = await startGateway({
      DATABASE_URL: a.config.DATABASE_URL,
      QUEUE_PREFIX: a.config.QUEUE_PREFIX,
      MAX_SERVICE_ACCOUNTS: String(MAX_ACCOUNTS),
    });
    await grantPolicy(MANAGER, ["MANAGE_SERVICE_ACCOUNTS"]);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("a token holds the account's current grants within its minter's current ones: a grant the minter lacks never reaches it", async () => {
    const manager = "urn:li:corpuser:sa-short-lived-manager";
    const managerPolicy = await grantPolicy(manager, ["MANAGE_SERVICE_ACCOUNTS", "VIEW_TESTS"]);
    const account = await createAccount("granted later", systemClientHeaders(manager));
    const token = await minted(account, systemClientHeaders(manager));
    expect(token.metadata.ownerUrn).toBe(manager); // who minted it is recorded
    expect(await privileges(a, token.accessToken)).toEqual([]);

    // A policy grants the account VIEW_TESTS, which its minter holds, and MANAGE_POLICIES, which it does not: the
    // token has only the first (its minter handed its secret out, and may not gain through it what it lacks).
    const accountPolicy = await grantPolicy(account, ["VIEW_TESTS", "MANAGE_POLICIES"]);
    expect(await privileges(a, token.accessToken)).toEqual(["VIEW_TESTS"]);
    // The same at a schedule's firing, which the workers read from PostgreSQL (work set through the token).
    const firing = ownerPrivilegesReader(a.prisma, ROOT);
    expect([...(await firing({ urn: account, tokenId: token.metadata.id, suspended: false }))]).toEqual(["VIEW_TESTS"]);
    // The minter loses what it held: so does the token, on the other replica too.
    await deletePolicy(managerPolicy);
    await eventually("the minter's grant gone on B", async () => {
      const now = await privileges(b, token.accessToken);
      return typeof now !== "number" && now.length === 0;
    });
    expect(await privileges(a, token.accessToken)).toEqual([]);
    await deletePolicy(accountPolicy);
  });

  it("revokeActorAccess of a minter revokes the service-account tokens it minted (it was handed their secrets), and suspends the work set through them", async () => {
    const manager = "urn:li:corpuser:sa-suspected-manager";
    await grantPolicy(manager, ["MANAGE_SERVICE_ACCOUNTS", "MANAGE_TESTS"]);
    const account = await createAccount("minted by a suspect", systemClientHeaders(manager));
    await grantPolicy(account, ["MANAGE_TESTS"]);
    const token = await minted(account, systemClientHeaders(manager));
    expect(await privileges(b, token.accessToken)).toEqual(["MANAGE_TESTS", "VIEW_TESTS"]);
    // Whoever holds the minted token schedules work as the account (its owner), which the minter's grants bound.
    const scheduled = await a.graphql(
      `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
      {
        i: {
          name: "scheduled through a minted token",
          category: "c",
          definition: {
            json: JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } }),
          },
          schedule: { cron: "0 4 * * *" },
        },
      },
      bearer(token.accessToken),
    );
    expect(scheduled.body.errors).toBeUndefined();
    const testUrn = scheduled.body.data!.createTest as string;
    const revoked = await ok<{
      revokeActorAccess: { revokedTokenIds: string[]; suspendedWork: Array<{ urn: string }> };
    }>(
      a,
      `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u, suspendWork: true}) { revokedTokenIds suspendedWork { urn } } }`,
      { u: manager },
    );
    expect(revoked.revokeActorAccess.revokedTokenIds).toContain(token.metadata.id);
    // Not the minter's own work, but what it handed out chose it: suspended with the minter's, as its webhooks are.
    expect(revoked.revokeActorAccess.suspendedWork.map((w) => w.urn)).toContain(testUrn);
    const test = await a.prisma.metadataTest.findUniqueOrThrow({ where: { urn: testUrn } });
    expect(test).toMatchObject({ ownerUrn: account, suspendedAt: expect.any(Date) });
    await eventually("refused on B", async () => (await privileges(b, token.accessToken)) === 401, {
      timeoutMs: 5_000,
    });
  });

  it("a token minted with a token is bounded by that token (its chain), as every token is", async () => {
    const account = await createAccount("chained");
    // A week: the child (a day) must not outlive it, which a same-length parent made a whole-second race
    const managerToken = await createToken(a, MANAGER, root, { duration: "ONE_WEEK" });
    const child = await mint(a, account, bearer(managerToken.token));
    expect(child.body.errors).toBeUndefined();
    const { accessToken } = child.body.data!.createAccessToken as { accessToken: string };
    // Granted to the account afterwards: the token it was minted with (its manager's, who lacks it) bounds it.
    await grantPolicy(account, ["VIEW_TESTS"]);
    expect(await privileges(a, accessToken)).toEqual([]);
    await ok(a, `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`, { t: managerToken.id });
    expect(await privileges(a, accessToken)).toBe(401);
  });

  it("refuses PERSONAL tokens for an account, SERVICE_ACCOUNT ones for a user or a deleted account, and a stronger account", async () => {
    const account = await createAccount("typed");
    expect(refusal((await mint(a, account, root, "PERSONAL")).body)).toEqual({
      code: "BAD_USER_INPUT",
      message: `input.type PERSONAL: ${account} is a service account, whose tokens are of type SERVICE_ACCOUNT`,
    });
    expect(refusal((await mint(a, "urn:li:corpuser:service_not-an-account")).body)).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("is not a service account"),
    });
    // An account that holds what its would-be minter does not: minting would hand the minter that power.
    const strong = await createAccount("strong");
    await grantPolicy(strong, ["MANAGE_POLICIES"]);
    expect(refusal((await mint(a, strong)).body)).toEqual({
      code: "FORBIDDEN",
      message: `${MANAGER} is unauthorized to generate access tokens for ${strong}: it holds privileges you do not.`,
    });
    await ok(a, DELETE, { u: account });
    expect(refusal((await mint(a, account)).body)).toEqual({
      code: "NOT_FOUND",
      message: `Service account ${account} does not exist (or has been deleted)`,
    });
    // A deleted account's urn is still a service account's: no PERSONAL token makes it a user.
    expect(refusal((await mint(a, account, root, "PERSONAL")).body).code).toBe("BAD_USER_INPUT");
    expect(refusal((await a.graphql(DELETE, { u: account }, root)).body)).toEqual({
      code: "NOT_FOUND",
      message: `Service account ${account} does not exist`,
    });
  });

  it("deleting an account: its token is refused by the other replica within 1 s, and the work it owns is suspended", async () => {
    const account = await createAccount("deleted under load");
    await grantPolicy(account, ["MANAGE_TESTS"]);
    const { accessToken } = await minted(account, root); // the manager lacks MANAGE_TESTS: it may not mint this one
    const created = await a.graphql(
      `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
      {
        i: {
          name: "owned by a service account",
          category: "c",
          definition: {
            json: JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } }),
          },
          schedule: { cron: "0 3 * * *" },
        },
      },
      bearer(accessToken),
    );
    expect(created.body.errors).toBeUndefined();
    const testUrn = created.body.data!.createTest as string;
    // B has verified the token, so it holds the row in its cache.
    expect(await privileges(b, accessToken)).toEqual(["MANAGE_TESTS", "VIEW_TESTS"]);

    expect((await a.graphql(DELETE, { u: account }, systemClientHeaders(MANAGER))).body).toEqual({
      data: { deleteServiceAccount: true },
    });
    // From the deletion's answer (when its caller knows it is done), so a loaded machine's slow transaction does not
    // count against the replicas' propagation.
    const startedAt = Date.now();
    await eventually("refused on B", async () => (await b.graphql(ME, {}, bearer(accessToken))).status === 401, {
      timeoutMs: 5_000,
    });
    expect(Date.now() - startedAt).toBeLessThan(1000);
    expect((await b.graphql(ME, {}, bearer(accessToken))).body.errors?.[0]?.message).toBe("Token has been revoked");

    const test = await a.prisma.metadataTest.findUniqueOrThrow({
      where: { urn: testUrn },
      select: { suspendedAt: true, suspendedReason: true },
    });
    expect(test).toEqual({ suspendedAt: expect.any(Date), suspendedReason: `deleteServiceAccount by ${MANAGER}` });
    const audit = await a.prisma.auditEvent.findMany({
      where: { targetUrn: account },
      orderBy: { id: "asc" },
      select: { action: true, actorUrn: true },
    });
    expect(audit.map((e) => e.action)).toEqual([
      "serviceAccount.create",
      "serviceAccount.delete",
      "accessToken.revokeAll",
      "actor.revokeAccess",
    ]);
    expect(new Set(audit.map((e) => e.actorUrn))).toEqual(new Set([MANAGER]));
    expect(await ok(a, `query($u: String!) { getServiceAccount(urn: $u) { urn } }`, { u: account })).toEqual({
      getServiceAccount: null,
    });
  });

  it("a mint racing the deletion either is refused or is revoked with the rest: no live token is left", async () => {
    const account = await createAccount("raced");
    const mints = Array.from({ length: 6 }, (_, i) => mint(i % 2 ? b : a, account));
    const [deleted, ...answers] = await Promise.all([a.graphql(DELETE, { u: account }, root), ...mints]);
    expect(deleted.body.errors).toBeUndefined();
    for (const answer of answers) {
      const token = answer.body.data?.createAccessToken as { accessToken: string } | undefined;
      if (token) expect(await privileges(b, token.accessToken)).toBe(401);
      else expect(refusal(answer.body).code).toBe("NOT_FOUND");
    }
    expect(await a.prisma.accessToken.count({ where: { actorUrn: account, revokedAt: null } })).toBe(0);
  });

  it("lists live accounts with when their tokens were last used", async () => {
    const account = await createAccount("used");
    const { accessToken } = await minted(account);
    const LIST = `query($q: String) { listServiceAccounts(input: {query: $q}) { total serviceAccounts { urn lastUsedAt } } }`;
    const before = await ok<{ listServiceAccounts: { serviceAccounts: unknown[] } }>(a, LIST, { q: account });
    expect(before.listServiceAccounts.serviceAccounts).toEqual([{ urn: account, lastUsedAt: null }]);
    const usedAt = Date.now();
    expect(await privileges(b, accessToken)).toEqual([]);
    // The last use is written within TokenUsageRecorder.FLUSH_INTERVAL_MS (5 s) of it.
    const listed = await eventually(
      "the last use listed",
      async () =>
        (
          await ok<{ listServiceAccounts: { serviceAccounts: Array<{ lastUsedAt: number | null }> } }>(a, LIST, {
            q: account,
          })
        ).listServiceAccounts.serviceAccounts[0]!.lastUsedAt,
      { timeoutMs: 15_000 },
    );
    expect(listed).toBeGreaterThanOrEqual(usedAt - 1000);
  });

  it("bounds names, descriptions and queries, and the live accounts (MAX_SERVICE_ACCOUNTS), two racing for the last place", async () => {
    const long = await a.graphql(CREATE, { i: { displayName: "x".repeat(257) } }, root);
    expect(refusal(long.body)).toEqual({
      code: "BAD_USER_INPUT",
      message: "input.displayName must be at most 256 characters long",
    });
    const description = await a.graphql(CREATE, { i: { description: "x".repeat(2001) } }, root);
    expect(refusal(description.body).message).toBe("input.description must be at most 2000 characters long");
    const query = await a.graphql(
      `query($q: String) { listServiceAccounts(input: {query: $q}) { total } }`,
      {
        q: "x".repeat(257),
      },
      root,
    );
    expect(refusal(query.body).message).toBe("input.query must be at most 256 characters long");

    const live = async () => a.prisma.serviceAccount.count({ where: { deletedAt: null } });
    const made: string[] = [];
    while ((await live()) < MAX_ACCOUNTS - 1) made.push(await createAccount("filler"));
    const racing = await Promise.all([a.graphql(CREATE, { i: {} }, root), b.graphql(CREATE, { i: {} }, root)]);
    expect(racing.map((r) => (r.body.errors ? refusal(r.body).code : "created")).sort()).toEqual([
      "CONFLICT",
      "created",
    ]);
    const refused = racing.find((r) => r.body.errors)!;
    expect(refusal(refused.body).message).toBe(
      `There are already ${MAX_ACCOUNTS} service accounts, the limit of ${MAX_ACCOUNTS} (MAX_SERVICE_ACCOUNTS); delete one first.`,
    );
    expect(await live()).toBe(MAX_ACCOUNTS);
    // A deleted account makes room again.
    const [last] = racing.flatMap((r) =>
      r.body.errors ? [] : [(r.body.data!.createServiceAccount as { urn: string }).urn],
    );
    await ok(a, DELETE, { u: last });
    for (const urn of made) await ok(a, DELETE, { u: urn });
    expect((await a.graphql(CREATE, { i: {} }, root)).body.errors).toBeUndefined();
  });
});
