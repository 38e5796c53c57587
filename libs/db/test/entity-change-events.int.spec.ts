/**
 * EntityChangeEvent_v1 events of tokens against real PostgreSQL (docs/events.md): each kind is written in the
 * transaction of its change, and not when the change rolls back or does not happen; every bulk revocation says why;
 * EXPIRING_SOON once per token and threshold with two chores racing.
 */
import { randomUUID } from "node:crypto";
import { eventually } from "@mdp/core/testing";
import {
  inPrismaTransaction,
  insertAccessTokenWithAudit,
  inTransaction,
  revokeAccessToken,
  revokeAccessTokenFamily,
  revokeIdleAccessTokens,
  revokeLiveAccessTokensOutside,
  revokeLiveServiceAccountTokensMintedBy,
  rotateAccessToken,
  writeTokenExpiryNotices,
} from "../src";
import { DAY, SYSTEM } from "./support/entity-change-events";
import { startEntityChangeEventsHarness } from "./support/entity-change-events-harness";

describe("EntityChangeEvent_v1 writers", () => {
  const ece = startEntityChangeEventsHarness();
  const { eventsOf } = ece;

  async function insertToken(actorUrn: string, createdAgoMs: number, expiresInMs: number): Promise<string> {
    const id = randomUUID();
    await ece.db.prisma.accessToken.create({
      data: {
        id,
        name: "t",
        actorUrn,
        ownerUrn: actorUrn,
        tokenHash: id.replaceAll("-", ""),
        createdAt: new Date(Date.now() - createdAgoMs),
        expiresAt: new Date(Date.now() + expiresInMs),
      },
    });
    return id;
  }

  it("writes a token's REVOKE with its revocation, and none when the revocation rolls back", async () => {
    const kept = await insertToken("urn:li:corpuser:ev-a", 0, DAY);
    const rolledBack = await insertToken("urn:li:corpuser:ev-a", 0, DAY);
    await inPrismaTransaction(ece.db.prisma, (tx) => revokeAccessToken(tx, kept, "urn:li:corpuser:admin"));
    await expect(
      inPrismaTransaction(ece.db.prisma, async (tx) => {
        await revokeAccessToken(tx, rolledBack, "urn:li:corpuser:admin");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");

    // Revoked again (two revocations racing): left as it was, no second event.
    await inPrismaTransaction(ece.db.prisma, (tx) => revokeAccessToken(tx, kept, "urn:li:corpuser:other"));
    expect(await eventsOf(`urn:li:dataHubAccessToken:${kept}`)).toHaveLength(1);
    const [revoked] = await eventsOf(`urn:li:dataHubAccessToken:${kept}`);
    expect(revoked).toMatchObject({
      category: "ACCESS_TOKEN",
      subject_actor: "urn:li:corpuser:ev-a",
      payload: {
        entityType: "dataHubAccessToken",
        operation: "REVOKE",
        parameters: { reason: "revoked" },
        auditStamp: { actor: "urn:li:corpuser:admin" },
        version: 0,
      },
    });
    expect(await eventsOf(`urn:li:dataHubAccessToken:${rolledBack}`)).toEqual([]);
  });

  it("writes a token's CREATE in its insert's statement and ROTATE with its rotation: none when they fail or roll back", async () => {
    const id = randomUUID();
    const token = {
      id,
      type: "PERSONAL" as const,
      name: "ci",
      description: null,
      actorUrn: "urn:li:corpuser:ev-mint",
      ownerUrn: "urn:li:corpuser:admin",
      tokenHash: randomUUID().replaceAll("-", ""),
      createdAt: Date.now(),
      expiresAtSeconds: Math.floor(Date.now() / 1000) + 3600,
      scopes: [],
      parentTokenId: null,
      audit: { actorUrn: "urn:li:corpuser:admin", targetUrn: `urn:li:accessToken:${id}`, details: {} },
    };
    await insertAccessTokenWithAudit(ece.db.pool, token);
    await expect(insertAccessTokenWithAudit(ece.db.pool, token)).rejects.toThrow(); // the same id: refused whole
    const created = await eventsOf(`urn:li:dataHubAccessToken:${id}`);
    expect(created.map((e) => e.payload.operation)).toEqual(["CREATE"]);
    expect(created[0]!.payload.parameters).toMatchObject({
      tokenType: "PERSONAL",
      name: "ci",
      ownerUrn: token.ownerUrn,
    });
    expect(JSON.stringify(created)).not.toContain(token.tokenHash);

    const successor = randomUUID();
    await expect(
      inPrismaTransaction(ece.db.prisma, async (tx) => {
        await rotateAccessToken(tx, {
          predecessorId: id,
          graceEndsAt: Date.now(),
          successor: { ...token, id: successor, tokenHash: randomUUID().replaceAll("-", "") },
          audit: { actorUrn: token.actorUrn, predecessorUrn: "p", successorUrn: "s", details: {} },
        });
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await eventsOf(`urn:li:dataHubAccessToken:${id}`)).toHaveLength(1);
    expect(await eventsOf(`urn:li:dataHubAccessToken:${successor}`)).toEqual([]);
  });

  it("says why in every bulk revocation's REVOKE: reuse of a rotated-out token, idle, outside the policy, a minter's access", async () => {
    const reasonsOf = async (id: string) =>
      (await eventsOf(`urn:li:dataHubAccessToken:${id}`)).map((e) => e.payload.parameters!.reason);
    // A family: a token rotated into a successor, then the rotated-out one reused.
    const first = await insertToken("urn:li:corpuser:ev-family", 0, DAY);
    const second = randomUUID();
    const familyId = await inPrismaTransaction(ece.db.prisma, (tx) =>
      rotateAccessToken(tx, {
        predecessorId: first,
        graceEndsAt: Date.now() + 60_000,
        successor: {
          id: second,
          type: "PERSONAL",
          name: "t",
          description: null,
          actorUrn: "urn:li:corpuser:ev-family",
          ownerUrn: "urn:li:corpuser:ev-family",
          tokenHash: second.replaceAll("-", ""),
          createdAt: Date.now(),
          expiresAtSeconds: Math.floor(Date.now() / 1000) + 3600,
          scopes: [],
          parentTokenId: null,
        },
        audit: { actorUrn: "urn:li:corpuser:ev-family", predecessorUrn: "p", successorUrn: "s", details: {} },
      }),
    );
    await inPrismaTransaction(ece.db.prisma, (tx) =>
      revokeAccessTokenFamily(tx, {
        familyId: familyId!,
        reusedTokenId: first,
        revokedBy: SYSTEM,
        urnOf: (id) => `urn:li:accessToken:${id}`,
        details: {},
      }),
    );
    expect(await reasonsOf(first)).toEqual([undefined, "reuseDetected"]); // ROTATE, REVOKE
    expect((await eventsOf(`urn:li:dataHubAccessToken:${first}`)).map((e) => e.payload.operation)).toEqual([
      "ROTATE",
      "REVOKE",
    ]);
    expect(await reasonsOf(second)).toEqual([undefined, "reuseDetected"]); // CREATE (rotatedFrom), REVOKE

    const idle = await insertToken("urn:li:corpuser:ev-idle", 40 * DAY, DAY);
    await inPrismaTransaction(ece.db.prisma, (tx) => revokeIdleAccessTokens(tx, 30, SYSTEM, (id) => id, {}));
    expect(await reasonsOf(idle)).toEqual(["idle"]);

    const odd = await insertToken("urn:li:corpuser:ev-policy", 0, 12_345_000);
    await inPrismaTransaction(ece.db.prisma, (tx) =>
      revokeLiveAccessTokensOutside(tx, { allowedSeconds: [3600, 86_400], allowNoExpiry: false }, SYSTEM),
    );
    expect(await reasonsOf(odd)).toEqual(["durationPolicy"]);

    const minted = randomUUID();
    await ece.db.prisma.accessToken.create({
      data: {
        id: minted,
        type: "SERVICE_ACCOUNT",
        name: "svc",
        actorUrn: "urn:li:corpuser:service_ev",
        ownerUrn: "urn:li:corpuser:ev-minter",
        tokenHash: minted.replaceAll("-", ""),
        expiresAt: new Date(Date.now() + DAY),
      },
    });
    await inPrismaTransaction(ece.db.prisma, (tx) =>
      revokeLiveServiceAccountTokensMintedBy(tx, "urn:li:corpuser:ev-minter", SYSTEM),
    );
    const [event] = await eventsOf(`urn:li:dataHubAccessToken:${minted}`);
    expect(event).toMatchObject({
      subject_actor: "urn:li:corpuser:service_ev",
      payload: { parameters: { reason: "minterAccessRevoked" } },
    });
  });

  it("tells EXPIRING_SOON once per token and threshold, with two chores racing and again after", async () => {
    const weekAway = await insertToken("urn:li:corpuser:ev-exp", 20 * DAY, 6 * DAY); // 26-day token, 6 days left
    const dayAway = await insertToken("urn:li:corpuser:ev-exp", 20 * DAY, 12 * 3_600_000); // 12 h left
    const shortLived = await insertToken("urn:li:corpuser:ev-exp", 0, 12 * 3_600_000); // a 12-hour token: no notice
    const far = await insertToken("urn:li:corpuser:ev-exp", 0, 30 * DAY);

    // Two chores at once: the second runs while the first has written its markers but not committed, waits on them,
    // and writes nothing once the first commits.
    const first = await ece.db.pool.connect();
    let second: Promise<number> | undefined;
    try {
      await first.query("BEGIN");
      expect(await writeTokenExpiryNotices(first, SYSTEM, 1000)).toBe(2);
      second = inTransaction(ece.db.pool, (client) => writeTokenExpiryNotices(client, SYSTEM, 1000));
      await eventually("the second chore waiting on the first's markers", async () => {
        const { rows } = await ece.db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%access_token_expiry_notice%'`,
        );
        return rows[0]!.n > 0;
      });
      await first.query("COMMIT");
    } finally {
      first.release();
    }
    expect(await second).toBe(0);
    expect(await writeTokenExpiryNotices(ece.db.pool, SYSTEM, 1000)).toBe(0);

    const week = await eventsOf(`urn:li:dataHubAccessToken:${weekAway}`);
    expect(week).toHaveLength(1);
    expect(week[0]).toMatchObject({
      subject_actor: "urn:li:corpuser:ev-exp",
      payload: { operation: "EXPIRING_SOON", parameters: { daysLeft: 7 }, auditStamp: { actor: SYSTEM } },
    });
    expect(week[0]!.payload.parameters!.expiresAt).toEqual(expect.any(Number));
    const day = await eventsOf(`urn:li:dataHubAccessToken:${dayAway}`);
    expect(day.map((e) => e.payload.parameters!.daysLeft)).toEqual([1]); // not a stale 7-day notice beside it
    expect(await eventsOf(`urn:li:dataHubAccessToken:${shortLived}`)).toEqual([]);
    expect(await eventsOf(`urn:li:dataHubAccessToken:${far}`)).toEqual([]);

    // A firing that rolls back leaves neither marker nor event: the next one tells the token.
    const later = await insertToken("urn:li:corpuser:ev-exp", 20 * DAY, 3 * DAY);
    await expect(
      inTransaction(ece.db.pool, async (client) => {
        expect(await writeTokenExpiryNotices(client, SYSTEM, 1000)).toBe(1);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await eventsOf(`urn:li:dataHubAccessToken:${later}`)).toEqual([]);
    expect(await writeTokenExpiryNotices(ece.db.pool, SYSTEM, 1000)).toBe(1);
    expect(await eventsOf(`urn:li:dataHubAccessToken:${later}`)).toHaveLength(1);

    // Six days on, the 7-day token reaches its 1-day threshold: told once more, at 1.
    await ece.db.pool.query("UPDATE access_token SET expires_at = now() + interval '20 hours' WHERE id = $1", [
      weekAway,
    ]);
    expect(await writeTokenExpiryNotices(ece.db.pool, SYSTEM, 1000)).toBe(1);
    expect(await writeTokenExpiryNotices(ece.db.pool, SYSTEM, 1000)).toBe(0);
    expect(
      (await eventsOf(`urn:li:dataHubAccessToken:${weekAway}`)).map((e) => e.payload.parameters!.daysLeft),
    ).toEqual([7, 1]);
  });
});
