/**
 * The token API over real HTTP, PostgreSQL and Redis: docs/api.md's example requests, its types,
 * limits and errors, and what is (not) stored.
 */
import { createHash } from "node:crypto";
import { eventually } from "@mdp/core/testing";
import { TokenUsageRecorder } from "../src/token-usage/token-usage.recorder";
import {
  CREATE_TOKEN,
  ROOT,
  bearer,
  createToken,
  grant,
  mintToken,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const DATAHUB = "urn:li:corpuser:datahub";
const asDatahub = { "x-platform-actor": DATAHUB };

describe("access tokens", () => {
  let h: Harness;

  beforeAll(async () => {
    // The seed's examples authenticate with the actor header alone, i.e. development mode.
    h = await startGateway({ AUTH_ENABLED: "false" });
    await grant(h, DATAHUB, ["MANAGE_ACCESS_TOKENS"]);
  });
  afterAll(() => h.close());

  describe("the documented example requests, unchanged", () => {
    let created: { accessToken: string; metadata: { id: string; name: string; description: string | null } };

    it("creates a token", async () => {
      const res = await h.graphql(
        `mutation {
          createAccessToken(input: {type: PERSONAL, actorUrn: "urn:li:corpuser:datahub", duration: ONE_HOUR, name: "my personal token"}) {
            accessToken
            metadata { id name description }
          }
        }`,
        {},
        asDatahub,
      );
      expect(res.body.errors).toBeUndefined();
      created = res.body.data!.createAccessToken as typeof created;
      expect(created.metadata).toEqual({ id: expect.any(String), name: "my personal token", description: null });
      expect(created.accessToken.split(".")).toHaveLength(3);
    });

    it.each(["ownerUrn", "actorUrn"])("lists the caller's own tokens with a %s filter", async (field) => {
      const res = await h.graphql(
        `{
          listAccessTokens(input: {start: 0, count: 100, filters: [{field: "${field}", value: "urn:li:corpuser:datahub"}]}) {
            start count total tokens { urn id actorUrn }
          }
        }`,
        {},
        asDatahub,
      );
      expect(res.body.data!.listAccessTokens).toEqual({
        start: 0,
        count: 1,
        total: 1,
        tokens: [
          { urn: `urn:li:dataHubAccessToken:${created.metadata.id}`, id: created.metadata.id, actorUrn: DATAHUB },
        ],
      });
    });

    it("lists every user's tokens with empty filters for a MANAGE_ACCESS_TOKENS holder", async () => {
      await createToken(h, "urn:li:corpuser:someone-else");
      const res = await h.graphql(
        `{ listAccessTokens(input: {start: 0, count: 100, filters: []}) { total tokens { actorUrn } } }`,
        {},
        asDatahub,
      );
      const list = res.body.data!.listAccessTokens as { total: number; tokens: Array<{ actorUrn: string }> };
      expect(list.total).toBe(2);
      expect(list.tokens.map((t) => t.actorUrn).sort()).toEqual([DATAHUB, "urn:li:corpuser:someone-else"]);
    });

    it("revokes by metadata.id, after which the token no longer authenticates", async () => {
      expect((await h.graphql(`{ me { urn } }`, {}, bearer(created.accessToken))).status).toBe(200);
      const res = await h.graphql(`mutation { revokeAccessToken(tokenId: "${created.metadata.id}") }`, {}, asDatahub);
      expect(res.body).toEqual({ data: { revokeAccessToken: true } });
      const after = await h.graphql(`{ me { urn } }`, {}, bearer(created.accessToken));
      expect(after.status).toBe(401);
      expect(after.body.errors?.[0]?.message).toBe("Token has been revoked");
    });
  });

  it.each([
    ["ONE_HOUR", 3600],
    ["ONE_DAY", 86400],
    ["ONE_WEEK", 7 * 86400],
    ["ONE_MONTH", 30 * 86400],
    ["THREE_MONTHS", 90 * 86400],
    ["SIX_MONTHS", 180 * 86400],
    ["ONE_YEAR", 365 * 86400],
  ])("creates a %s token that expires %i seconds after creation", async (duration, seconds) => {
    const res = await h.graphql(
      CREATE_TOKEN,
      { input: { type: "PERSONAL", actorUrn: DATAHUB, duration, name: duration } },
      asDatahub,
    );
    const metadata = (res.body.data!.createAccessToken as { metadata: { createdAt: number; expiresAt: number } })
      .metadata;
    // Expiry is to the second (the exp claim's precision): `duration` after the second the token was issued in.
    expect(metadata.expiresAt).toBe((Math.floor(metadata.createdAt / 1000) + seconds) * 1000);
  });

  it("refuses NO_EXPIRY unless the server allows it", async () => {
    const res = await h.graphql(
      CREATE_TOKEN,
      { input: { type: "PERSONAL", actorUrn: DATAHUB, duration: "NO_EXPIRY", name: "forever" } },
      asDatahub,
    );
    expect(res.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining("NO_EXPIRY is not allowed"),
      extensions: { code: "BAD_USER_INPUT" },
    });
  });

  it("accepts CreateAccessTokenInput as another name for the input type", async () => {
    const res = await h.graphql(
      `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { metadata { name } } }`,
      { input: { type: "PERSONAL", actorUrn: DATAHUB, duration: "ONE_DAY", name: "aliased" } },
      asDatahub,
    );
    expect(res.body).toEqual({ data: { createAccessToken: { metadata: { name: "aliased" } } } });
  });

  it("renames only the alias type: text that mentions it is stored as given", async () => {
    const res = await h.graphql(
      `mutation($input: CreateAccessTokenInput!) {
         createAccessToken(input: $input) { metadata { name description } }
       }`,
      {
        input: {
          type: "PERSONAL",
          actorUrn: DATAHUB,
          duration: "ONE_DAY",
          name: "for CreateAccessTokenInput clients",
          description: "see CreateAccessTokenInput",
        },
      },
      asDatahub,
    );
    expect(res.body.data?.createAccessToken).toEqual({
      metadata: { name: "for CreateAccessTokenInput clients", description: "see CreateAccessTokenInput" },
    });
  });

  it("counts a name's length in characters, as its column does, not in UTF-16 units", async () => {
    const input = { type: "PERSONAL", actorUrn: DATAHUB, duration: "ONE_HOUR", name: "😀".repeat(256) };
    const fits = await h.graphql(CREATE_TOKEN, { input }, asDatahub);
    expect(fits.body.errors).toBeUndefined();
    const tooLong = await h.graphql(CREATE_TOKEN, { input: { ...input, name: "😀".repeat(257) } }, asDatahub);
    expect(tooLong.body.errors?.[0]?.message).toBe("input.name must be 1 to 256 characters long");
  });

  it.each([
    [{ name: "" }, "input.name must be 1 to 256 characters long"],
    [{ name: "x".repeat(257) }, "input.name must be 1 to 256 characters long"],
    [{ description: "x".repeat(2001) }, "input.description must be at most 2000 characters long"],
    [{ actorUrn: "datahub" }, "Invalid urn in 'input.actorUrn': 'datahub'"],
    [{ actorUrn: "urn:li:dataset:x" }, "is not a corpuser urn"],
  ])("refuses bad input %p naming the field", async (override, message) => {
    const input = { type: "PERSONAL", actorUrn: DATAHUB, duration: "ONE_HOUR", name: "ok", ...override };
    const res = await h.graphql(CREATE_TOKEN, { input }, asDatahub);
    expect(res.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining(message),
      extensions: { code: "BAD_USER_INPUT" },
    });
  });

  it("refuses an unknown duration through GraphQL's own validation", async () => {
    const input = { type: "PERSONAL", actorUrn: DATAHUB, duration: "TWO_HOURS", name: "x" };
    const res = await h.graphql(CREATE_TOKEN, { input }, asDatahub);
    expect(res.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
  });

  it("stores only a salted hash: the raw token appears nowhere in the database", async () => {
    const { token, id } = await createToken(h, DATAHUB, asDatahub);
    const row = await h.prisma.accessToken.findUniqueOrThrow({ where: { id } });
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.tokenHash).not.toBe(createHash("sha256").update(token).digest("hex")); // salted, not a bare hash
    const dump = await h.prisma.$queryRaw<Array<{ t: string }>>`SELECT row_to_json(a)::text AS t FROM access_token a`;
    const audit = await h.prisma.$queryRaw<Array<{ t: string }>>`SELECT row_to_json(a)::text AS t FROM audit_event a`;
    for (const { t } of [...dump, ...audit]) expect(t).not.toContain(token);
  });

  it("refuses an expired token and does not list it", async () => {
    const expired = await mintToken(h, DATAHUB, Math.floor(Date.now() / 1000) - 10);
    const res = await h.graphql(`{ me { urn } }`, {}, bearer(expired));
    expect(res.status).toBe(401);
    expect(res.body.errors?.[0]?.message).toBe("Token has expired.");
    const list = await h.graphql(`{ listAccessTokens(input: {filters: []}) { tokens { name } } }`, {}, asDatahub);
    const names = (list.body.data!.listAccessTokens as { tokens: Array<{ name: string }> }).tokens.map((t) => t.name);
    expect(names).not.toContain("minted");
  });

  it("lists newest first, pages with start and count, and caps count at 1000", async () => {
    const actor = "urn:li:corpuser:pager";
    // Made within a second or so: the order must still be the order they were made in.
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await createToken(h, actor)).id);
    const page = (start: number, count: number) =>
      h.graphql(
        `query($start: Int, $count: Int) { listAccessTokens(input: {start: $start, count: $count, filters: [{field: "actorUrn", value: "${actor}"}]}) { start count total tokens { id createdAt } } }`,
        { start, count },
        asDatahub,
      );
    const all = (await page(0, 10)).body.data!.listAccessTokens as {
      total: number;
      tokens: Array<{ id: string; createdAt: number }>;
    };
    expect(all.total).toBe(5);
    expect(all.tokens.map((t) => t.id)).toEqual([...made].reverse());
    const second = (await page(2, 2)).body.data!.listAccessTokens as {
      start: number;
      count: number;
      tokens: Array<{ id: string }>;
    };
    expect(second).toMatchObject({ start: 2, count: 2 });
    expect(second.tokens.map((t) => t.id)).toEqual(all.tokens.slice(2, 4).map((t) => t.id));
    const tooMany = await page(0, 1001);
    expect(tooMany.body.errors?.[0]).toMatchObject({
      message: "input.count must be between 0 and 1000",
      extensions: { code: "BAD_USER_INPUT" },
    });
  });

  it("refuses a filter on a field that is not filterable, naming it", async () => {
    const res = await h.graphql(
      `{ listAccessTokens(input: {filters: [{field: "tokenHash", value: "x"}]}) { total } }`,
      {},
      asDatahub,
    );
    expect(res.body.errors?.[0]?.message).toContain("input.filters[0].field 'tokenHash' is not filterable");
  });

  it.each(["constructor", "toString", "__proto__"])(
    "refuses the filter field %s, which every JavaScript object has, as not filterable",
    async (field) => {
      const res = await h.graphql(
        `{ listAccessTokens(input: {filters: [{field: "${field}", value: "x"}]}) { total } }`,
        {},
        asDatahub,
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining(`input.filters[0].field '${field}' is not filterable`),
        extensions: { code: "BAD_USER_INPUT" },
      });
    },
  );

  it.each([
    ["actorUrn", `value: "alice"`, "input.filters[0].value", "'alice'"],
    [
      "ownerUrn",
      `values: ["urn:li:corpuser:ann", "urn:li:dataset:x"]`,
      "input.filters[0].values[1]",
      "is not a corpuser",
    ],
  ])(
    "refuses a malformed user urn in a %s filter, naming it, rather than listing nothing",
    async (field, value, named, why) => {
      const res = await h.graphql(
        `{ listAccessTokens(input: {filters: [{field: "${field}", ${value}}]}) { total } }`,
        {},
        asDatahub,
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringMatching(new RegExp(`'${named.replace(/[[\].]/g, "\\$&")}'.*${why}`)),
        extensions: { code: "BAD_USER_INPUT" },
      });
    },
  );

  it("takes a filter's value when its values are empty", async () => {
    const actor = "urn:li:corpuser:valued";
    await createToken(h, actor);
    const res = await h.graphql(
      `{ listAccessTokens(input: {filters: [{field: "actorUrn", value: "${actor}", values: []}]}) { total } }`,
      {},
      asDatahub,
    );
    expect(res.body).toEqual({ data: { listAccessTokens: { total: 1 } } });
  });

  it("answers NOT_FOUND for revoking a token that does not exist", async () => {
    const res = await h.graphql(`mutation { revokeAccessToken(tokenId: "no-such-token") }`, {}, asDatahub);
    expect(res.body.errors?.[0]).toMatchObject({
      message: "Access token no-such-token does not exist",
      extensions: { code: "NOT_FOUND" },
    });
  });

  it("revokes a token named by its id in upper case on this replica too, whose cache knows it in lower case", async () => {
    const { token, id } = await createToken(h, DATAHUB, asDatahub);
    expect((await h.graphql(`{ me { urn } }`, {}, bearer(token))).status).toBe(200); // now known to this replica
    const res = await h.graphql(`mutation { revokeAccessToken(tokenId: "${id.toUpperCase()}") }`, {}, asDatahub);
    expect(res.body).toEqual({ data: { revokeAccessToken: true } });
    const after = await h.graphql(`{ me { urn } }`, {}, bearer(token));
    expect(after.body.errors?.[0]?.message).toBe("Token has been revoked");
  });

  it("answers NOT_FOUND, not UNAUTHENTICATED, for the metadata of a token that is no token", async () => {
    const res = await h.graphql(`{ getAccessTokenMetadata(token: "garbage") { id } }`, {}, asDatahub);
    expect(res.body.errors?.[0]).toMatchObject({
      message: "Access token does not exist",
      extensions: { code: "NOT_FOUND" },
    });
  });

  it("returns a token's metadata to its actor", async () => {
    const { token, id } = await createToken(h, DATAHUB, asDatahub);
    const res = await h.graphql(
      `query($t: String!) { getAccessTokenMetadata(token: $t) { id actorUrn ownerUrn } }`,
      { t: token },
      asDatahub,
    );
    expect(res.body.data!.getAccessTokenMetadata).toEqual({ id, actorUrn: DATAHUB, ownerUrn: DATAHUB });
  });

  it("answers NOT_FOUND saying so for the metadata of a revoked token, as for one that no longer exists", async () => {
    const { token, id } = await createToken(h, DATAHUB, asDatahub);
    await h.graphql(`mutation { revokeAccessToken(tokenId: "${id}") }`, {}, asDatahub);
    const res = await h.graphql(
      `query($t: String!) { getAccessTokenMetadata(token: $t) { id } }`,
      { t: token },
      asDatahub,
    );
    expect(res.body).toMatchObject({
      data: null,
      errors: [{ message: "Access token has been revoked", extensions: { code: "NOT_FOUND" } }],
    });
  });

  it("keeps lastUsedAt within a few seconds of use, without a write per request", async () => {
    const { token, id } = await createToken(h, DATAHUB, asDatahub);
    const before = Date.now();
    for (let i = 0; i < 3; i++) await h.graphql(`{ me { urn } }`, {}, bearer(token));
    expect((await h.prisma.accessToken.findUniqueOrThrow({ where: { id } })).lastUsedAt).toBeNull();
    // Written by the recorder's own timer, not on request: within one flush interval (and a little for the write).
    const used = await eventually(
      "lastUsedAt written",
      async () => (await h.prisma.accessToken.findUniqueOrThrow({ where: { id } })).lastUsedAt,
      { timeoutMs: TokenUsageRecorder.FLUSH_INTERVAL_MS + 500 },
    );
    expect(used?.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it("leaves an audit row for creation and revocation, readable by a MANAGE_POLICIES holder", async () => {
    const { id } = await createToken(h, DATAHUB, asDatahub);
    await h.graphql(`mutation { revokeAccessToken(tokenId: "${id}") }`, {}, asDatahub);
    const res = await h.graphql(
      `query($t: String) { listAuditEvents(input: {targetUrn: $t}) { total events { actorUrn action targetUrn createdAt } } }`,
      { t: `urn:li:dataHubAccessToken:${id}` },
      systemClientHeaders(ROOT),
    );
    const audit = res.body.data!.listAuditEvents as {
      total: number;
      events: Array<{ action: string; actorUrn: string }>;
    };
    expect(audit.events.map((e) => [e.action, e.actorUrn])).toEqual([
      ["accessToken.revoke", DATAHUB],
      ["accessToken.create", DATAHUB],
    ]);
  });

  it.each([
    ["actorUrn", "alice", "'input.actorUrn': 'alice'"],
    ["actorUrn", "urn:li:dataset:x", "is not a corpuser urn"],
    ["targetUrn", "accessToken:123", "'input.targetUrn': 'accessToken:123'"],
  ])("refuses a malformed %s filter on audit events, naming it, rather than listing nothing", async (f, v, says) => {
    const res = await h.graphql(
      `query($v: String) { listAuditEvents(input: {${f}: $v}) { total } }`,
      { v },
      systemClientHeaders(ROOT),
    );
    expect(res.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining(says),
      extensions: { code: "BAD_USER_INPUT" },
    });
  });
});
