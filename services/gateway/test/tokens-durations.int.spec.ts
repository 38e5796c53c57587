/**
 * Token lifetimes as DataHub now configures them: durationIso beside the duration enum, ACCESS_TOKEN_ALLOWED_DURATIONS
 * for both, and the tokens minted before a policy change listed (outsideDurationPolicy) and revoked in one call.
 */
import {
  CREATE_TOKEN,
  ROOT,
  bearer,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const ADMIN = "urn:li:corpuser:token-admin";
const USER = "urn:li:corpuser:token-user";
const asAdmin = { "x-platform-actor": ADMIN };
const DAY_MS = 86_400_000;

describe("access token durations", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startGateway({ AUTH_ENABLED: "false", ACCESS_TOKEN_ALLOWED_DURATIONS: "PT1H,P1D,P1M" });
    await grant(h, ADMIN, ["MANAGE_ACCESS_TOKENS"]);
  });
  afterAll(() => h.close());

  const create = (input: Record<string, unknown>) =>
    h.graphql(
      CREATE_TOKEN,
      { input: { type: "PERSONAL", actorUrn: USER, name: "t", ...input } },
      systemClientHeaders(ROOT),
    );
  const created = (res: Awaited<ReturnType<typeof create>>) => {
    const token = res.body.data?.createAccessToken as
      { accessToken: string; metadata: { id: string; createdAt: number; expiresAt: number } } | undefined;
    if (!token) throw new Error(JSON.stringify(res.body.errors));
    return token;
  };
  const errorOf = (res: Awaited<ReturnType<typeof create>>) => ({
    code: res.body.errors?.[0]?.extensions?.code,
    message: res.body.errors?.[0]?.message,
  });

  it("mints a token for an ISO-8601 durationIso: P1M is 30 days from the second it was created in", async () => {
    const { metadata } = created(await create({ durationIso: "P1M" }));
    expect(metadata.expiresAt).toBe(Math.floor(metadata.createdAt / 1000) * 1000 + 30 * DAY_MS);
    const audit = await h.prisma.auditEvent.findFirst({
      where: { targetUrn: `urn:li:dataHubAccessToken:${metadata.id}` },
    });
    expect(audit?.details).toMatchObject({ durationIso: "P1M" });
  });

  it.each([
    ["both", { duration: "ONE_HOUR", durationIso: "PT1H" }],
    ["neither", {}],
  ])("refuses %s of duration and durationIso, naming both fields", async (given, input) => {
    expect(errorOf(await create(input))).toEqual({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining(
        `input.duration and input.durationIso: give exactly one of them (${given} given)`,
      ),
    });
  });

  it.each([
    ["durationIso", { durationIso: "P2D" }, "input.durationIso P2D"],
    ["the duration enum", { duration: "ONE_YEAR" }, "input.duration ONE_YEAR"],
  ])(
    "refuses a lifetime outside ACCESS_TOKEN_ALLOWED_DURATIONS asked for as %s, naming the list",
    async (_, input, at) => {
      expect(errorOf(await create(input))).toEqual({
        code: "BAD_USER_INPUT",
        message: expect.stringContaining(
          `${at} is not an allowed token lifetime on this server: ACCESS_TOKEN_ALLOWED_DURATIONS=PT1H,P1D,P1M`,
        ),
      });
    },
  );

  it("refuses a durationIso that is not ISO-8601", async () => {
    expect(errorOf(await create({ durationIso: "30 days" }))).toEqual({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("input.durationIso '30 days' is not an ISO-8601 duration"),
    });
  });

  it("lists the live tokens outside the current policy, and revokes them all at once, audited per token", async () => {
    const within = created(await create({ duration: "ONE_DAY" }));
    const outside = created(await create({ durationIso: "PT1H" }));
    // A token minted for a year before the policy dropped P365D: its expiry is what a year's mint would have set.
    const issuedAt = Math.floor(outside.metadata.createdAt / 1000) * 1000;
    await h.prisma.accessToken.update({
      where: { id: outside.metadata.id },
      data: { expiresAt: new Date(issuedAt + 365 * DAY_MS) },
    });
    const list = async (value: string) => {
      const res = await h.graphql(
        `query($v: String!) { listAccessTokens(input: {count: 100, filters: [{field: "outsideDurationPolicy", value: $v}]}) { total tokens { id } } }`,
        { v: value },
        asAdmin,
      );
      return (res.body.data!.listAccessTokens as { tokens: Array<{ id: string }> }).tokens.map((t) => t.id);
    };
    expect(await list("true")).toEqual([outside.metadata.id]);
    expect(await list("false")).toContain(within.metadata.id);
    expect(await list("false")).not.toContain(outside.metadata.id);
    // Known to this replica's cache before the revocation, so the refusal below proves the cache was told.
    expect((await h.graphql(`{ me { urn } }`, {}, bearer(outside.accessToken))).status).toBe(200);

    const res = await h.graphql(`mutation { revokeAccessTokensOutsidePolicy }`, {}, asAdmin);
    expect(res.body.data).toEqual({ revokeAccessTokensOutsidePolicy: [outside.metadata.id] });
    expect((await h.graphql(`{ me { urn } }`, {}, bearer(outside.accessToken))).status).toBe(401);
    expect((await h.graphql(`{ me { urn } }`, {}, bearer(within.accessToken))).status).toBe(200);
    expect(await list("true")).toEqual([]);
    const audit = await h.prisma.auditEvent.findMany({
      where: { action: "accessToken.revoke", targetUrn: `urn:li:dataHubAccessToken:${outside.metadata.id}` },
    });
    expect(audit).toEqual([
      expect.objectContaining({
        actorUrn: ADMIN,
        details: expect.objectContaining({ reason: "durationPolicy", bulk: true }),
      }),
    ]);
  });

  it("refuses the filter with a value other than 'true' or 'false'", async () => {
    const res = await h.graphql(
      `{ listAccessTokens(input: {filters: [{field: "outsideDurationPolicy", value: "yes"}]}) { total } }`,
      {},
      asAdmin,
    );
    expect(res.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
  });
});
