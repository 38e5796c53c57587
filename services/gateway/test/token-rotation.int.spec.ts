/**
 * rotateAccessToken on two gateways sharing one database and Redis: the successor keeps its predecessor's name,
 * scopes, actor and lifetime; the predecessor works through its grace window and no longer; a rotated-out token used
 * after its window revokes its whole family on both gateways (audited as suspected theft); a token rotates itself
 * without a privilege, never into more; bad grace windows are BAD_USER_INPUT naming the field and the limit.
 */
import { eventually } from "@mdp/core/testing";
import {
  bearer,
  createToken,
  grant,
  ROOT,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const ROTATE = `mutation($t: String!, $g: Int) {
  rotateAccessToken(tokenId: $t, graceSeconds: $g) {
    accessToken
    metadata { id name description actorUrn ownerUrn scopes createdAt expiresAt rotatedFromId parentTokenId }
  }
}`;
const ME = `{ me { urn } }`;

interface Rotated {
  accessToken: string;
  metadata: {
    id: string;
    name: string;
    description: string | null;
    actorUrn: string;
    ownerUrn: string;
    scopes: string[] | null;
    createdAt: number;
    expiresAt: number | null;
    rotatedFromId: string | null;
    parentTokenId: string | null;
  };
}

describe("rotateAccessToken", () => {
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    a = await startGateway();
    b = await startGateway({ DATABASE_URL: a.config.DATABASE_URL, QUEUE_PREFIX: a.config.QUEUE_PREFIX });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function rotate(
    h: Harness,
    tokenId: string,
    graceSeconds: number | undefined,
    headers: Record<string, string>,
  ) {
    const res = await h.graphql(ROTATE, { t: tokenId, g: graceSeconds }, headers);
    return { rotated: res.body.data?.rotateAccessToken as Rotated | undefined, errors: res.body.errors };
  }
  const works = async (h: Harness, token: string) => (await h.graphql(ME, {}, bearer(token))).status === 200;

  it("mints a successor with the same name, scopes and lifetime; the old token works through its grace window", async () => {
    const user = "urn:li:corpuser:rotate-grace";
    await grant(a, user, ["VIEW_TESTS"]);
    const old = await createToken(a, user, systemClientHeaders(ROOT), {
      name: "nightly export",
      description: "the exporter",
      scopes: ["VIEW_TESTS"],
      duration: "ONE_WEEK",
    });
    expect(await works(b, old.token)).toBe(true); // B caches it, unrotated

    const before = Date.now();
    const { rotated, errors } = await rotate(a, old.id, 3600, systemClientHeaders(ROOT));
    expect(errors).toBeUndefined();
    const m = rotated!.metadata;
    expect(m).toMatchObject({
      name: "nightly export",
      description: "the exporter",
      actorUrn: user,
      ownerUrn: ROOT,
      scopes: ["VIEW_TESTS"],
      rotatedFromId: old.id,
      parentTokenId: null,
    });
    expect(m.id).not.toBe(old.id);
    // The same lifetime (a week), counted from the rotation.
    expect(m.expiresAt! - Math.floor(m.createdAt / 1000) * 1000).toBe(7 * 86_400_000);
    expect(m.createdAt).toBeGreaterThanOrEqual(before - 1000);

    // Both work, on either gateway, within the grace window; nothing is revoked.
    expect(await works(a, rotated!.accessToken)).toBe(true);
    expect(await works(b, rotated!.accessToken)).toBe(true);
    expect(await works(b, old.token)).toBe(true);
    // The old token's listing says what became of it, and its expiry is its grace window's end.
    const list = await a.graphql(
      `query($u: String!) { listAccessTokens(input: {filters: [{field: "actorUrn", value: $u}]}) {
        tokens { id expiresAt rotatedToId rotatedAt } } }`,
      { u: user },
      systemClientHeaders(ROOT),
    );
    const listed = (list.body.data!.listAccessTokens as { tokens: Array<Record<string, unknown>> }).tokens;
    const oldListed = listed.find((t) => t.id === old.id)!;
    expect(oldListed.rotatedToId).toBe(m.id);
    expect(oldListed.expiresAt as number).toBeLessThanOrEqual(Date.now() + 3600_000);
    expect(oldListed.expiresAt as number).toBeGreaterThan(Date.now() + 3500_000);

    // Audited: the rotation on the old token, the successor's creation naming where it came from.
    const rows = await a.prisma.auditEvent.findMany({
      where: {
        action: { in: ["accessToken.rotate", "accessToken.create"] },
        details: { path: ["rotatedFromId"], equals: old.id },
      },
    });
    expect(rows).toHaveLength(1);
    const rotation = await a.prisma.auditEvent.findFirst({ where: { action: "accessToken.rotate" } });
    expect(rotation).toMatchObject({ actorUrn: ROOT, targetUrn: `urn:li:dataHubAccessToken:${old.id}` });
    expect(rotation!.details).toMatchObject({ successorId: m.id, graceSeconds: 3600, self: false, via: "system" });

    // A token rotates once: the next rotation is its successor's.
    const again = await rotate(a, old.id, 0, systemClientHeaders(ROOT));
    expect(again.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(again.errors?.[0]?.message).toContain(`rotated already`);
    expect(again.errors?.[0]?.message).toContain(m.id);
  });

  it("a token rotates itself without any privilege; reused after its window it revokes its family on both gateways", async () => {
    const user = "urn:li:corpuser:rotate-self"; // holds no privilege at all
    const old = await createToken(a, user);
    expect(await works(b, old.token)).toBe(true); // cached on B

    const { rotated, errors } = await rotate(a, old.id, undefined, bearer(old.token));
    expect(errors).toBeUndefined();
    const successor = rotated!.accessToken;
    expect(await works(a, successor)).toBe(true);
    expect(await works(b, successor)).toBe(true); // cached on B too, before the theft is found

    // Grace 0 (the default): the old token used again, on the other gateway, is reuse.
    const reused = await b.graphql(ME, {}, bearer(old.token));
    expect(reused.status).toBe(401);
    expect(reused.body.errors?.[0]?.message).toContain("suspected theft");
    // The successor is refused on both gateways: B at once, A once B's word arrives.
    expect(await works(b, successor)).toBe(false);
    await eventually("the successor refused on A", async () => !(await works(a, successor)), { timeoutMs: 2_000 });

    const theft = await a.prisma.auditEvent.findMany({ where: { action: "accessToken.reuseDetected" } });
    expect(theft).toHaveLength(1);
    expect(theft[0]).toMatchObject({ targetUrn: `urn:li:dataHubAccessToken:${old.id}` });
    expect(theft[0]!.details).toMatchObject({
      suspectedTheft: true,
      actorUrn: user,
      revokedTokenIds: expect.arrayContaining([old.id, rotated!.metadata.id]),
    });
    const revokes = await a.prisma.auditEvent.count({
      where: { action: "accessToken.revoke", details: { path: ["reason"], equals: "reuseDetected" } },
    });
    expect(revokes).toBe(2);
    // Used again: refused as revoked, and the theft is not recorded twice.
    expect(await works(a, old.token)).toBe(false);
    expect(await a.prisma.auditEvent.count({ where: { action: "accessToken.reuseDetected" } })).toBe(1);
  });

  it("refuses the old token once a short grace window has passed, and the family goes with it", async () => {
    const user = "urn:li:corpuser:rotate-window";
    const old = await createToken(a, user);
    const { rotated } = await rotate(a, old.id, 1, bearer(old.token));
    expect(await works(a, old.token)).toBe(true); // within the second
    await eventually("the old token refused past its window", async () => !(await works(b, old.token)), {
      timeoutMs: 5_000,
    });
    expect(await works(a, rotated!.accessToken)).toBe(false);
  });

  it("never rotates into more: a scoped token may not rotate an unscoped one of its user", async () => {
    const user = "urn:li:corpuser:rotate-scoped";
    await grant(a, user, ["GENERATE_PERSONAL_ACCESS_TOKENS", "VIEW_TESTS"]);
    const wide = await createToken(a, user);
    const narrow = await createToken(a, user, systemClientHeaders(ROOT), {
      scopes: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
    });
    const refused = await rotate(a, wide.id, 0, bearer(narrow.token));
    expect(refused.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    // Itself, it may: the successor has its scopes, no more.
    const self = await rotate(a, narrow.id, 60, bearer(narrow.token));
    expect(self.rotated!.metadata.scopes).toEqual(["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    // Another user's token needs MANAGE_ACCESS_TOKENS.
    const other = await createToken(a, "urn:li:corpuser:rotate-other");
    const foreign = await rotate(a, other.id, 0, bearer(wide.token));
    expect(foreign.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(await works(a, other.token)).toBe(true);
  });

  it.each([
    [86_401, "graceSeconds 86401 is more than 86400 seconds (one day)"],
    [-1, "graceSeconds must be a whole number of seconds from 0 to 86400"],
  ])("refuses graceSeconds %d naming the field and the limit", async (grace, message) => {
    const { id } = await createToken(a, "urn:li:corpuser:rotate-bad");
    const { errors } = await rotate(a, id, grace, systemClientHeaders(ROOT));
    expect(errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(errors?.[0]?.message).toContain(message);
  });
});
