/**
 * Revocation and policy changes do not depend on pub/sub being healthy: two gateways on one database and a private
 * Redis; with that Redis stalled (CLIENT PAUSE ... WRITE, which holds PUBLISH) or stopped, a token revoked through one
 * is refused by the other within 1 s, a policy deleted through one stops granting on the other within 1 s, and the
 * revoke call itself returns at once instead of waiting for Redis.
 */
import { Redis } from "ioredis";
import { eventually } from "@mdp/core/testing";
import { closeRedis } from "@mdp/queues";
import { ROOT, createToken, startGateway, systemClientHeaders, bearer, type Harness } from "./support/gateway-harness";
import { startPrivateRedis, type PrivateRedis } from "../../../test/support/private-redis";

const ALICE = "urn:li:corpuser:alice";
const BOB = "urn:li:corpuser:bob";
const ME = `{ me { urn privileges } }`;

/** Polls until `check` holds; returns how long that took after `since` (throws past `limitMs`). */
async function msUntil(since: number, check: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
  await eventually("enforced", check, { timeoutMs: since + limitMs - Date.now() });
  return Date.now() - since;
}

describe("revocation and policy changes while pub/sub is stalled or down", () => {
  let redis: PrivateRedis;
  let admin: Redis;
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url, { maxRetriesPerRequest: null });
    a = await startGateway({ REDIS_URL: redis.url });
    b = await startGateway({
      REDIS_URL: redis.url,
      DATABASE_URL: a.config.DATABASE_URL,
      QUEUE_PREFIX: a.config.QUEUE_PREFIX,
    });
  });

  afterAll(async () => {
    await redis?.restart().catch(() => undefined); // closing the gateways' queues wants a Redis
    if (admin) await closeRedis(admin);
    await b?.close();
    await a?.close();
    await redis?.stop();
  });

  /** A token for `user` that B has verified (and so cached), and a policy granting `user` a privilege B has seen. */
  async function arrange(user: string) {
    const { token, id } = await createToken(a, user);
    const policy = await a.graphql(
      `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
      { i: { name: `views for ${user}`, state: "ACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [user] } } },
      systemClientHeaders(ROOT),
    );
    const policyUrn = policy.body.data?.createPolicy as string;
    const privilegesOnB = async () =>
      ((await b.graphql(ME, {}, bearer(token))).body.data?.me as { privileges: string[] } | undefined)?.privileges;
    await msUntil(Date.now(), async () => (await privilegesOnB())?.includes("VIEW_TESTS") ?? false);
    return { token, id, policyUrn, privilegesOnB };
  }

  /** Revokes the token on A; answers when it started and how long it took. */
  async function revokeOnA(id: string) {
    const startedAt = Date.now();
    const revoke = await a.graphql(`mutation { revokeAccessToken(tokenId: "${id}") }`, {}, systemClientHeaders(ROOT));
    expect(revoke.body).toEqual({ data: { revokeAccessToken: true } });
    return { startedAt, revokeMs: Date.now() - startedAt };
  }

  /**
   * Deletes the policy on A; answers when it started. Each change's 1 s counts from its own start: the deletion (a
   * publish Redis may hold up) is no part of how fast B refuses the revoked token.
   */
  async function deleteOnA(policyUrn: string) {
    const startedAt = Date.now();
    const deleted = await a.graphql(`mutation { deletePolicy(urn: "${policyUrn}") }`, {}, systemClientHeaders(ROOT));
    expect(deleted.body.errors).toBeUndefined();
    return startedAt;
  }

  it("with Redis writes paused: B refuses the revoked token and drops the privilege within 1 s; revoke is quick", async () => {
    const { token, id, policyUrn } = await arrange(ALICE);
    await admin.call("CLIENT", "PAUSE", "8000", "WRITE");
    try {
      const { startedAt, revokeMs } = await revokeOnA(id);
      expect(revokeMs).toBeLessThan(1000);
      const refusedMs = await msUntil(startedAt, async () => (await b.graphql(ME, {}, bearer(token))).status === 401);
      expect(refusedMs).toBeLessThan(1000);
      const deletedAt = await deleteOnA(policyUrn);
      const privilegeGoneMs = await msUntil(deletedAt, async () => {
        const me = (await b.graphql(ME, {}, systemClientHeaders(ALICE))).body.data?.me as { privileges: string[] };
        return !me.privileges.includes("VIEW_TESTS");
      });
      expect(privilegeGoneMs).toBeLessThan(1000);
      expect((await b.graphql(ME, {}, bearer(token))).body.errors?.[0]?.message).toBe("Token has been revoked");
    } finally {
      await admin.call("CLIENT", "UNPAUSE");
    }
  });

  it("with Redis stopped: the same, and a token that was never revoked still works", async () => {
    const { token, id, policyUrn } = await arrange(BOB);
    const untouched = await createToken(a, BOB);
    expect((await b.graphql(ME, {}, bearer(untouched.token))).status).toBe(200);
    // BullMQ's queues report the lost connection on the console; expected here.
    jest.spyOn(console, "error").mockImplementation(() => undefined);
    await redis.stop();
    const { startedAt, revokeMs } = await revokeOnA(id);
    expect(revokeMs).toBeLessThan(1000);
    const refusedMs = await msUntil(startedAt, async () => (await b.graphql(ME, {}, bearer(token))).status === 401);
    expect(refusedMs).toBeLessThan(1000);
    const deletedAt = await deleteOnA(policyUrn);
    const privilegeGoneMs = await msUntil(deletedAt, async () => {
      const me = (await b.graphql(ME, {}, systemClientHeaders(BOB))).body.data?.me as { privileges: string[] };
      return !me.privileges.includes("VIEW_TESTS");
    });
    expect(privilegeGoneMs).toBeLessThan(1000);
    // Verified from PostgreSQL meanwhile: the others are unaffected.
    expect((await b.graphql(ME, {}, bearer(untouched.token))).body.data?.me).toMatchObject({ urn: BOB });
  });
});
