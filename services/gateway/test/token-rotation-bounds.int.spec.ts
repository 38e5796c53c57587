/**
 * Who bounds a rotation's successor, over real HTTP, PostgreSQL and Redis. Rotating a token that is not the one in
 * use mints the successor for the caller, as createAccessToken would: the caller is its minter, the caller's token
 * its parent, it expires no later than that token, and the chain's depth limit holds. A token rotating itself keeps
 * its minter and parent. Either way a rotation family ends ACCESS_TOKEN_FAMILY_MAX_DAYS after its first token was
 * created: successors are cut to that end, and a token at it is not renewed.
 */
import { MAX_TOKEN_CHAIN_DEPTH } from "@mdp/core";
import {
  bearer,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type GraphQLBody,
  type Harness,
} from "./support/gateway-harness";

const DAY_MS = 86_400_000;
const CREATE = `mutation($i: GetAccessTokenInput!) {
  createAccessToken(input: $i) { accessToken metadata { id actorUrn ownerUrn scopes createdAt expiresAt parentTokenId } }
}`;
const ROTATE = `mutation($t: String!, $g: Int) {
  rotateAccessToken(tokenId: $t, graceSeconds: $g) {
    accessToken
    metadata { id actorUrn ownerUrn scopes createdAt expiresAt rotatedFromId parentTokenId }
  }
}`;
const ME = `{ me { urn privileges } }`;

interface Token {
  accessToken: string;
  metadata: {
    id: string;
    actorUrn: string;
    ownerUrn: string;
    scopes: string[] | null;
    createdAt: number;
    expiresAt: number | null;
    rotatedFromId: string | null;
    parentTokenId: string | null;
  };
}

const errorOf = (body: GraphQLBody) => ({
  code: body.errors?.[0]?.extensions?.code,
  message: body.errors?.[0]?.message,
});
const iso = (ms: number) => new Date(ms).toISOString();

describe("rotateAccessToken: who bounds the successor, and how long a family lives", () => {
  let a: Harness;
  /** the same database and Redis, with families of one day */
  let oneDay: Harness;
  const asRoot = systemClientHeaders(ROOT);

  beforeAll(async () => {
    a = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    oneDay = await startGateway({
      DATABASE_URL: a.config.DATABASE_URL,
      QUEUE_PREFIX: a.config.QUEUE_PREFIX,
      ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true",
      ACCESS_TOKEN_FAMILY_MAX_DAYS: "1",
    });
  });
  afterAll(async () => {
    await oneDay?.close();
    await a?.close();
  });

  /** createAccessToken as `headers`; throws on a refusal */
  async function mint(
    headers: Record<string, string>,
    actorUrn: string,
    duration: string,
    more: Record<string, unknown> = {},
  ): Promise<Token> {
    const res = await a.graphql(
      CREATE,
      { i: { type: "PERSONAL", actorUrn, name: "rotated", duration, ...more } },
      headers,
    );
    if (!res.body.data?.createAccessToken) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data.createAccessToken as Token;
  }
  async function rotate(h: Harness, tokenId: string, headers: Record<string, string>, graceSeconds = 0) {
    const res = await h.graphql(ROTATE, { t: tokenId, g: graceSeconds }, headers);
    return { rotated: res.body.data?.rotateAccessToken as Token | undefined, error: errorOf(res.body) };
  }
  const privileges = async (token: string) =>
    ((await a.graphql(ME, {}, bearer(token))).body.data?.me as { privileges: string[] } | undefined)?.privileges;
  const row = (id: string) => a.prisma.accessToken.findUniqueOrThrow({ where: { id } });

  describe("rotating another user's token with MANAGE_ACCESS_TOKENS", () => {
    const MANAGER = "urn:li:corpuser:rb-manager"; // MANAGE_ACCESS_TOKENS; MANAGE_POLICIES only when granted below
    const USER = "urn:li:corpuser:rb-user"; // nothing, until granted MANAGE_POLICIES below
    beforeAll(() => grant(a, MANAGER, ["MANAGE_ACCESS_TOKENS"]));

    it("refuses a successor outliving the one-hour token in use: 400 naming tokenId and when that token expires", async () => {
      const managerHour = await mint(systemClientHeaders(MANAGER), MANAGER, "ONE_HOUR");
      const year = await mint(asRoot, USER, "ONE_YEAR");
      const before = await a.prisma.accessToken.count();

      const { rotated, error } = await rotate(a, year.metadata.id, bearer(managerHour.accessToken));
      expect(rotated).toBeUndefined();
      expect(error).toEqual({
        code: "BAD_USER_INPUT",
        message:
          `tokenId ${year.metadata.id}'s successor would outlive the access token in use, which expires at ` +
          `${iso(managerHour.metadata.expiresAt!)}: a token created with another may not expire after it; rotate ` +
          `it with a longer-lived token (or let the token rotate itself)`,
      });
      // Nothing was minted, and the year-long token was not rotated out.
      expect(await a.prisma.accessToken.count()).toBe(before);
      expect(await row(year.metadata.id)).toMatchObject({ rotatedAt: null, rotatedToId: null });
      expect((await a.graphql(ME, {}, bearer(year.accessToken))).status).toBe(200);
    });

    it("mints the successor for the caller: its minter and its token bound it at every use, and it ends with that token", async () => {
      const managerMonth = await mint(systemClientHeaders(MANAGER), MANAGER, "ONE_MONTH");
      const week = await mint(asRoot, USER, "ONE_WEEK"); // minted by root, who holds everything
      const { rotated, error } = await rotate(a, week.metadata.id, bearer(managerMonth.accessToken), 60);
      expect(error.message).toBeUndefined();
      const successor = rotated!;
      expect(successor.metadata).toMatchObject({
        actorUrn: USER,
        ownerUrn: MANAGER,
        parentTokenId: managerMonth.metadata.id,
        rotatedFromId: week.metadata.id,
      });
      // Its lifetime, a week, within the caller's month.
      expect(successor.metadata.expiresAt! - Math.floor(successor.metadata.createdAt / 1000) * 1000).toBe(7 * DAY_MS);

      // Listed, and found among what the caller's token set in motion.
      const listed = await a.graphql(
        `query($id: String!) { listAccessTokens(input: {filters: [{field: "id", value: $id}]}) {
          tokens { ownerUrn parentTokenId rotatedFromId } } }`,
        { id: successor.metadata.id },
        asRoot,
      );
      expect(listed.body.data).toEqual({
        listAccessTokens: {
          tokens: [{ ownerUrn: MANAGER, parentTokenId: managerMonth.metadata.id, rotatedFromId: week.metadata.id }],
        },
      });
      const work = await a.graphql(
        `query($t: String!) { delegatedWork(input: {tokenId: $t}) { kind urn ownerUrn viaTokenId } }`,
        { t: managerMonth.metadata.id },
        asRoot,
      );
      expect(work.body.data?.delegatedWork).toContainEqual({
        kind: "ACCESS_TOKEN",
        urn: `urn:li:dataHubAccessToken:${successor.metadata.id}`,
        ownerUrn: MANAGER,
        viaTokenId: managerMonth.metadata.id,
      });
      // The audit rows name the new minter and parent; the family is the rotated token's.
      const audit = await a.prisma.auditEvent.findFirstOrThrow({
        where: { action: "accessToken.rotate", targetUrn: `urn:li:dataHubAccessToken:${week.metadata.id}` },
      });
      expect(audit).toMatchObject({ actorUrn: MANAGER });
      expect(audit.details).toMatchObject({
        ownerUrn: MANAGER,
        parentTokenId: managerMonth.metadata.id,
        self: false,
        via: "token",
      });
      expect((await row(successor.metadata.id)).familyId).toBe(week.metadata.id);

      // A privilege the user gains later is not the successor's while its minter lacks it (root minted the token it
      // replaced, and would have let it through).
      await grant(a, USER, ["MANAGE_POLICIES"]);
      expect(await privileges(successor.accessToken)).toEqual([]);
      const refused = await a.graphql(`{ listPolicies(input: {}) { total } }`, {}, bearer(successor.accessToken));
      expect(errorOf(refused.body)).toEqual({
        code: "FORBIDDEN",
        message:
          `${USER} is unauthorized to list policies: the access token was created by ${MANAGER}, who does not hold ` +
          `MANAGE_POLICIES.`,
      });
      // Once the caller holds it too, the successor may use it.
      await grant(a, MANAGER, ["MANAGE_POLICIES"]);
      expect(await privileges(successor.accessToken)).toEqual(["MANAGE_POLICIES"]);

      // Revoking the caller's token ends the successor with it.
      const revoked = await a.graphql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: managerMonth.metadata.id },
        asRoot,
      );
      expect(revoked.body.data).toEqual({ revokeAccessToken: true });
      const after = await a.graphql(ME, {}, bearer(successor.accessToken));
      expect(after.status).toBe(401);
      expect(after.body.errors?.[0]?.message).toBe(
        `Token has been revoked: the access token it was created with (${managerMonth.metadata.id}) is revoked.`,
      );
    });
  });

  describe("rotating another token of one's own", () => {
    const OWNER = "urn:li:corpuser:rb-owner"; // GENERATE_PERSONAL_ACCESS_TOKENS
    beforeAll(() => grant(a, OWNER, ["GENERATE_PERSONAL_ACCESS_TOKENS"]));

    it("the token in use becomes the successor's parent; the successor stays in its family for reuse detection", async () => {
      const inUse = await mint(systemClientHeaders(OWNER), OWNER, "ONE_DAY");
      const other = await mint(systemClientHeaders(OWNER), OWNER, "ONE_HOUR");
      const { rotated, error } = await rotate(a, other.metadata.id, bearer(inUse.accessToken));
      expect(error.message).toBeUndefined();
      expect(rotated!.metadata).toMatchObject({ ownerUrn: OWNER, parentTokenId: inUse.metadata.id });
      expect(await row(rotated!.metadata.id)).toMatchObject({
        parentTokenId: inUse.metadata.id,
        familyId: other.metadata.id,
      });

      // The rotated-out token used after its window (0 s) revokes the successor as before.
      const reused = await a.graphql(ME, {}, bearer(other.accessToken));
      expect(reused.body.errors?.[0]?.message).toContain("suspected theft");
      expect((await a.graphql(ME, {}, bearer(rotated!.accessToken))).status).toBe(401);
      expect((await a.graphql(ME, {}, bearer(inUse.accessToken))).status).toBe(200);
    });

    it(`refuses it to the ${MAX_TOKEN_CHAIN_DEPTH}th token of a chain (400 naming the limit), as minting`, async () => {
      let last = await mint(systemClientHeaders(OWNER), OWNER, "NO_EXPIRY");
      for (let i = 1; i < MAX_TOKEN_CHAIN_DEPTH; i++) last = await mint(bearer(last.accessToken), OWNER, "NO_EXPIRY");
      const other = await mint(systemClientHeaders(OWNER), OWNER, "ONE_HOUR");
      const { error } = await rotate(a, other.metadata.id, bearer(last.accessToken));
      expect(error).toEqual({
        code: "BAD_USER_INPUT",
        message: expect.stringContaining(
          `the access token in use is the last of a chain of ${MAX_TOKEN_CHAIN_DEPTH} tokens`,
        ),
      });
      expect(await row(other.metadata.id)).toMatchObject({ rotatedAt: null });
    });
  });

  describe("a family's absolute lifetime", () => {
    const SELF = "urn:li:corpuser:rb-self"; // no privilege: its tokens rotate themselves
    const MINTER = "urn:li:corpuser:rb-minter"; // MANAGE_ACCESS_TOKENS: mints SELF's first token with its own token
    beforeAll(() => grant(a, MINTER, ["MANAGE_ACCESS_TOKENS"]));

    /** Moves the family's first token's creation by `ms` (its row alone: the tokens' own lifetimes stay). */
    const moveFamilyStart = (firstId: string, ms: number) =>
      a.prisma.$executeRaw`UPDATE access_token SET created_at = created_at + ${ms}::int8 * interval '1 millisecond'
                            WHERE id = ${firstId}::uuid`;
    /** Makes a token `ms` older: its creation and expiry both earlier, its lifetime the same. */
    const age = (id: string, ms: number) =>
      a.prisma.$executeRaw`UPDATE access_token SET created_at = created_at - ${ms}::int8 * interval '1 millisecond',
                                                   expires_at = expires_at - ${ms}::int8 * interval '1 millisecond'
                            WHERE id = ${id}::uuid`;

    it("cuts a self-rotation's successor to the family's end, keeping its minter and parent, then refuses to renew it", async () => {
      const minterToken = await mint(systemClientHeaders(MINTER), MINTER, "ONE_MONTH");
      const first = await mint(bearer(minterToken.accessToken), SELF, "ONE_WEEK");
      // The first rotation renews the week in full (the family has a year).
      const second = (await rotate(a, first.metadata.id, bearer(first.accessToken))).rotated!;
      expect(second.metadata.expiresAt! - Math.floor(second.metadata.createdAt / 1000) * 1000).toBe(7 * DAY_MS);

      // The family began 360 days ago, and its second token 3 days ago: the family ends in about 5 days, after the
      // second token (4 days) and before another week.
      await moveFamilyStart(first.metadata.id, -360 * DAY_MS);
      await age(second.metadata.id, 3 * DAY_MS);
      const familyEnd = Math.floor(((await row(first.metadata.id)).createdAt.getTime() + 365 * DAY_MS) / 1000) * 1000;
      const { rotated: third, error } = await rotate(a, second.metadata.id, bearer(second.accessToken));
      expect(error.message).toBeUndefined();
      expect(third!.metadata).toMatchObject({
        expiresAt: familyEnd,
        // A token rotating itself keeps whom it was minted by and with.
        ownerUrn: MINTER,
        parentTokenId: minterToken.metadata.id,
      });
      const audit = await a.prisma.auditEvent.findFirstOrThrow({
        where: { action: "accessToken.rotate", targetUrn: `urn:li:dataHubAccessToken:${second.metadata.id}` },
      });
      expect(audit.details).toMatchObject({ familyEndsAt: familyEnd, self: true, ownerUrn: MINTER });

      // At the family's end: no renewal, itself or by anyone, and the token keeps working until then.
      const atEnd =
        `tokenId ${third!.metadata.id} cannot be renewed: its rotation family's lifetime ends at ${iso(familyEnd)} ` +
        `(ACCESS_TOKEN_FAMILY_MAX_DAYS=365 days after its first token was created), and the token expires no ` +
        `earlier; create a new token instead`;
      for (const headers of [bearer(third!.accessToken), asRoot]) {
        expect((await rotate(a, third!.metadata.id, headers)).error).toEqual({
          code: "BAD_USER_INPUT",
          message: atEnd,
        });
      }
      expect((await a.graphql(ME, {}, bearer(third!.accessToken))).status).toBe(200);

      // Under a larger ACCESS_TOKEN_FAMILY_MAX_DAYS (here: a family begun a day later), the cut token's lifetime is
      // not mistaken for one the server stopped allowing.
      await moveFamilyStart(first.metadata.id, DAY_MS);
      expect((await rotate(a, third!.metadata.id, bearer(third!.accessToken))).error).toEqual({
        code: "BAD_USER_INPUT",
        message:
          `tokenId ${third!.metadata.id} was cut short to expire at its rotation family's end (364 days after its ` +
          `first token was created, under an earlier ACCESS_TOKEN_FAMILY_MAX_DAYS), so the lifetime to renew it ` +
          `with is unknown; create a new token instead`,
      });
    });

    it("follows ACCESS_TOKEN_FAMILY_MAX_DAYS, and leaves never-expiring families unbounded", async () => {
      // One day: a week-long token's family ends before the token does, so it is never renewed.
      const week = await mint(asRoot, SELF, "ONE_WEEK");
      const dayEnd = Math.floor((week.metadata.createdAt + DAY_MS) / 1000) * 1000;
      expect((await rotate(oneDay, week.metadata.id, bearer(week.accessToken))).error).toEqual({
        code: "BAD_USER_INPUT",
        message: expect.stringContaining(
          `its rotation family's lifetime ends at ${iso(dayEnd)} (ACCESS_TOKEN_FAMILY_MAX_DAYS=1 days`,
        ),
      });
      // An hour-long one renews in full while the day lasts.
      const hour = await mint(asRoot, SELF, "ONE_HOUR");
      const renewed = (await rotate(oneDay, hour.metadata.id, bearer(hour.accessToken))).rotated!;
      expect(renewed.metadata.expiresAt! - Math.floor(renewed.metadata.createdAt / 1000) * 1000).toBe(3_600_000);

      // A token that never expires has no family end: ACCESS_TOKEN_ALLOW_NO_EXPIRY already lets it live for ever.
      const forever = await mint(asRoot, SELF, "NO_EXPIRY");
      await moveFamilyStart(forever.metadata.id, -3650 * DAY_MS);
      const { rotated, error } = await rotate(oneDay, forever.metadata.id, bearer(forever.accessToken));
      expect(error.message).toBeUndefined();
      expect(rotated!.metadata.expiresAt).toBeNull();
    });
  });
});
