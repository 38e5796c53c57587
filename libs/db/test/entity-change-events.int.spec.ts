/**
 * EntityChangeEvent_v1 events against real PostgreSQL (docs/events.md): each kind is written in the transaction of
 * its change, and not when the change rolls back or does not happen; EXPIRING_SOON once per token and threshold with
 * two chores racing; a test result's flip writes one event and an unchanged result none; payloads stay bounded;
 * listPlatformEventRows' window, scope and `oldest` after pruning.
 */
import { randomUUID } from "node:crypto";
import { ENTITY_CHANGE_EVENT } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import {
  entityChangePayload,
  inPrismaTransaction,
  insertAccessTokenWithAudit,
  insertEntityChangeEvents,
  insertTransitions,
  inTransaction,
  listPlatformEventRows,
  PLATFORM_EVENT_PAYLOAD,
  prunePlatformEvents,
  revokeAccessToken,
  revokeAccessTokenFamily,
  revokeIdleAccessTokens,
  revokeLiveAccessTokensOutside,
  revokeLiveServiceAccountTokensMintedBy,
  rotateAccessToken,
  sequencePlatformEvents,
  suspendIn,
  TaskRepository,
  writeTokenExpiryNotices,
  type ReaderScope,
} from "../src";

const DAY = 86_400_000;
const SYSTEM = "urn:li:corpuser:__datahub_system";

interface EventRow {
  entity_urn: string;
  category: string;
  subject_actor: string | null;
  payload: {
    operation: string;
    modifier?: string;
    parameters?: Record<string, unknown>;
    auditStamp: { actor: string };
    version: number;
  };
}

describe("EntityChangeEvent_v1 writers", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("entity_change_events");
    db = createDatabase(testDb.url, { poolMax: 6 });
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  const eventsOf = async (urn: string): Promise<EventRow[]> =>
    (
      await db.pool.query<EventRow>(
        `SELECT entity_urn, category, subject_actor, payload FROM platform_event
          WHERE event_type = $1 AND entity_urn = $2 ORDER BY id`,
        [ENTITY_CHANGE_EVENT, urn],
      )
    ).rows;

  async function insertToken(actorUrn: string, createdAgoMs: number, expiresInMs: number): Promise<string> {
    const id = randomUUID();
    await db.prisma.accessToken.create({
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
    await inPrismaTransaction(db.prisma, (tx) => revokeAccessToken(tx, kept, "urn:li:corpuser:admin"));
    await expect(
      inPrismaTransaction(db.prisma, async (tx) => {
        await revokeAccessToken(tx, rolledBack, "urn:li:corpuser:admin");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");

    // Revoked again (two revocations racing): left as it was, no second event.
    await inPrismaTransaction(db.prisma, (tx) => revokeAccessToken(tx, kept, "urn:li:corpuser:other"));
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
    await insertAccessTokenWithAudit(db.pool, token);
    await expect(insertAccessTokenWithAudit(db.pool, token)).rejects.toThrow(); // the same id: refused whole
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
      inPrismaTransaction(db.prisma, async (tx) => {
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
    const familyId = await inPrismaTransaction(db.prisma, (tx) =>
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
    await inPrismaTransaction(db.prisma, (tx) =>
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
    await inPrismaTransaction(db.prisma, (tx) => revokeIdleAccessTokens(tx, 30, SYSTEM, (id) => id, {}));
    expect(await reasonsOf(idle)).toEqual(["idle"]);

    const odd = await insertToken("urn:li:corpuser:ev-policy", 0, 12_345_000);
    await inPrismaTransaction(db.prisma, (tx) =>
      revokeLiveAccessTokensOutside(tx, { allowedSeconds: [3600, 86_400], allowNoExpiry: false }, SYSTEM),
    );
    expect(await reasonsOf(odd)).toEqual(["durationPolicy"]);

    const minted = randomUUID();
    await db.prisma.accessToken.create({
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
    await inPrismaTransaction(db.prisma, (tx) =>
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
    const first = await db.pool.connect();
    let second: Promise<number> | undefined;
    try {
      await first.query("BEGIN");
      expect(await writeTokenExpiryNotices(first, SYSTEM, 1000)).toBe(2);
      second = inTransaction(db.pool, (client) => writeTokenExpiryNotices(client, SYSTEM, 1000));
      await eventually("the second chore waiting on the first's markers", async () => {
        const { rows } = await db.pool.query<{ n: number }>(
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
    expect(await writeTokenExpiryNotices(db.pool, SYSTEM, 1000)).toBe(0);

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
      inTransaction(db.pool, async (client) => {
        expect(await writeTokenExpiryNotices(client, SYSTEM, 1000)).toBe(1);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await eventsOf(`urn:li:dataHubAccessToken:${later}`)).toEqual([]);
    expect(await writeTokenExpiryNotices(db.pool, SYSTEM, 1000)).toBe(1);
    expect(await eventsOf(`urn:li:dataHubAccessToken:${later}`)).toHaveLength(1);

    // Six days on, the 7-day token reaches its 1-day threshold: told once more, at 1.
    await db.pool.query("UPDATE access_token SET expires_at = now() + interval '20 hours' WHERE id = $1", [weekAway]);
    expect(await writeTokenExpiryNotices(db.pool, SYSTEM, 1000)).toBe(1);
    expect(await writeTokenExpiryNotices(db.pool, SYSTEM, 1000)).toBe(0);
    expect(
      (await eventsOf(`urn:li:dataHubAccessToken:${weekAway}`)).map((e) => e.payload.parameters!.daysLeft),
    ).toEqual([7, 1]);
  });

  it("writes a TEST_RESULT event when a result flips between pass and fail, none for a first or unchanged one", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,ev.flip,PROD)";
    const test = "urn:li:test:ev-flip";
    const push = (passing: boolean) =>
      inTransaction(db.pool, (client) => insertTransitions(client, [{ urn, test, passing, at: Date.now() }]));
    await push(true); // first result: no flip
    await push(true); // unchanged
    expect(await eventsOf(urn)).toEqual([]);
    await push(false);
    await push(false);
    await expect(
      inTransaction(db.pool, async (client) => {
        await insertTransitions(client, [{ urn, test, passing: true, at: Date.now() }]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    const events = await eventsOf(urn);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      category: "TEST_RESULT",
      subject_actor: null,
      payload: { entityType: "dataset", operation: "FAIL", modifier: test, parameters: { previous: "PASS" } },
    });
    await push(true);
    expect((await eventsOf(urn)).map((e) => e.payload.operation)).toEqual(["FAIL", "PASS"]);
  });

  it("writes a TASK event with a truncation's final transition, and none for a stale attempt's", async () => {
    const tasks = new TaskRepository(db);
    const create = async (request: Record<string, unknown>) => {
      const id = randomUUID();
      await db.prisma.task.create({
        data: {
          id,
          type: "TRUNCATE_TIMESERIES",
          state: "active",
          request: { entityType: "dataset", aspect: "datasetProfile", ...request },
          createdBy: "urn:li:corpuser:ev-task",
          leaseToken: "lease",
          leaseExpiresAt: new Date(Date.now() + 60_000),
        },
      });
      return id;
    };
    const done = await create({});
    expect(await tasks.end({ taskId: done, token: "stale" }, "completed", {}, null, {})).toBe(false);
    expect(await eventsOf(`urn:li:dataHubTask:${done}`)).toEqual([]);
    expect(
      await tasks.end({ taskId: done, token: "lease" }, "completed", { deleted: 42 }, null, {
        deleted: 42,
        bytesFreed: 8192,
      }),
    ).toBe(true);
    const [complete] = await eventsOf(`urn:li:dataHubTask:${done}`);
    expect(complete).toMatchObject({
      category: "TASK",
      subject_actor: "urn:li:corpuser:ev-task",
      payload: {
        entityType: "dataHubTask",
        operation: "COMPLETE",
        parameters: { taskType: "truncation", aspect: "datasetProfile", rowsDeleted: 42, bytesFreed: 8192 },
      },
    });

    const retention = await create({ retentionPolicy: "urn:li:retentionPolicy:p1" });
    await tasks.end({ taskId: retention, token: "lease" }, "failed", { deleted: 7 }, "Timed out after 60 s: secret");
    const [fail] = await eventsOf(`urn:li:dataHubTask:${retention}`);
    expect(fail!.payload).toMatchObject({
      operation: "FAIL",
      parameters: { taskType: "retention", rowsDeleted: 7, errorCode: "TIMEOUT" },
    });
    expect(JSON.stringify(fail)).not.toContain("secret"); // a code, never the stored reason

    const cancelled = await create({});
    await tasks.cancelStuck({ taskId: cancelled, token: "lease" }, () => "Cancelled");
    expect((await eventsOf(`urn:li:dataHubTask:${cancelled}`)).map((e) => e.payload.operation)).toEqual(["CANCEL"]);
  });

  it("writes SCHEDULE SUSPEND with a suspension, about the owner, and none when it rolls back", async () => {
    const make = async (urn: string) =>
      db.prisma.metadataTest.create({
        data: {
          urn,
          name: "t",
          category: "c",
          definitionText: "{}",
          definition: {},
          onTypes: ["dataset"],
          createdBy: "urn:li:corpuser:ev-owner",
          ownerUrn: "urn:li:corpuser:ev-owner",
          scheduleCron: "0 * * * *",
        },
      });
    await make("urn:li:test:ev-suspended");
    await make("urn:li:test:ev-rolled-back");
    await inPrismaTransaction(db.prisma, (tx) =>
      suspendIn(tx, { kind: "SCHEDULED_TEST", urn: "urn:li:test:ev-suspended" }, "owner lost it", undefined, {
        missingPrivileges: ["MANAGE_TESTS"],
      }),
    );
    await expect(
      inPrismaTransaction(db.prisma, async (tx) => {
        await suspendIn(tx, { kind: "SCHEDULED_TEST", urn: "urn:li:test:ev-rolled-back" }, "x");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    // Suspended already: no second event.
    await inPrismaTransaction(db.prisma, (tx) =>
      suspendIn(tx, { kind: "SCHEDULED_TEST", urn: "urn:li:test:ev-suspended" }, "again"),
    );
    const events = await eventsOf("urn:li:test:ev-suspended");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      category: "SCHEDULE",
      subject_actor: "urn:li:corpuser:ev-owner",
      payload: {
        entityType: "test",
        operation: "SUSPEND",
        parameters: { reason: "owner lost it", missingPrivileges: ["MANAGE_TESTS"] },
      },
    });
    expect(await eventsOf("urn:li:test:ev-rolled-back")).toEqual([]);
  });

  it(`bounds every payload to ${PLATFORM_EVENT_PAYLOAD.maxBytes} bytes, strings and lists cut`, async () => {
    const change = {
      category: "SCHEDULE" as const,
      operation: "SUSPEND" as const,
      entityType: "test",
      entityUrn: "urn:li:test:ev-bounds",
      parameters: {
        reason: "é".repeat(100_000),
        missingPrivileges: Array.from({ length: 1000 }, (_, i) => `PRIVILEGE_${i}`),
        ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, "x".repeat(300)])),
      },
      actorUrn: SYSTEM,
      subjectActor: null,
    };
    const payload = entityChangePayload(change);
    expect(Buffer.byteLength(JSON.stringify(payload))).toBeLessThanOrEqual(PLATFORM_EVENT_PAYLOAD.maxBytes);
    const params = payload.parameters as Record<string, unknown> | undefined;
    if (params) {
      expect((params.reason as string).length).toBeLessThanOrEqual(PLATFORM_EVENT_PAYLOAD.stringChars);
      expect((params.missingPrivileges as string[]).length).toBeLessThanOrEqual(PLATFORM_EVENT_PAYLOAD.listItems);
    } else {
      expect(payload.parametersCut).toBe(true);
    }
    await insertEntityChangeEvents(db.pool, [change]);
    const stored = await db.pool.query<{ bytes: number }>(
      "SELECT octet_length(payload::text) AS bytes FROM platform_event WHERE entity_urn = 'urn:li:test:ev-bounds'",
    );
    expect(stored.rows[0]!.bytes).toBeLessThanOrEqual(PLATFORM_EVENT_PAYLOAD.maxBytes + 256); // jsonb's spacing
  });

  it("lists a window of the stream for a reader's scope, moving past what it cannot read, and reports oldest", async () => {
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 10_000));
    const mine = "urn:li:corpuser:ev-reader";
    const before = await db.pool.query<{ max: string | null }>("SELECT max(seq)::text AS max FROM platform_event");
    const since = before.rows[0]!.max ?? "0";
    await insertEntityChangeEvents(
      db.pool,
      ["urn:li:corpuser:someone", mine, "urn:li:corpuser:someone"].map((subject, i) => ({
        category: "ACCESS_TOKEN",
        operation: "CREATE",
        entityType: "dataHubAccessToken",
        entityUrn: `urn:li:dataHubAccessToken:list-${i}`,
        actorUrn: subject,
        subjectActor: subject,
      })),
    );
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 10_000));
    const nothing: ReaderScope = {
      urn: mine,
      mclTests: false,
      mclEntities: false,
      categories: [],
      scheduleTests: false,
      scheduleOther: false,
      subjectCategories: ["ACCESS_TOKEN"], // its own token events: it may list its own tokens
    };
    const page = await listPlatformEventRows(db.pool, { since, count: 10, scan: 10, scope: nothing, filter: {} });
    expect(page.events.map((e) => e.entityUrn)).toEqual(["urn:li:dataHubAccessToken:list-1"]);
    expect(BigInt(page.scannedTo!)).toBe(BigInt(since) + 3n); // past the two it may not read
    const all = await listPlatformEventRows(db.pool, {
      since,
      count: 10,
      scan: 2,
      scope: { ...nothing, categories: ["ACCESS_TOKEN"] },
      filter: { categories: ["ACCESS_TOKEN"] },
    });
    expect(all.events.map((e) => e.entityUrn)).toEqual([
      "urn:li:dataHubAccessToken:list-0",
      "urn:li:dataHubAccessToken:list-1",
    ]); // a window of two rows
    expect(all.oldest).toBe("1");

    await db.pool.query("UPDATE platform_event SET created_at = now() - interval '3 days' WHERE seq <= $1", [since]);
    await db.pool.query("INSERT INTO platform_event_cursor (consumer, seq) VALUES ('ev-test', $1)", [since]);
    expect(await prunePlatformEvents(db.pool, 1, 10_000)).toBeGreaterThan(0);
    const after = await listPlatformEventRows(db.pool, { since: "0", count: 10, scan: 10, scope: nothing, filter: {} });
    expect(after.oldest).toBe((BigInt(since) + 1n).toString());
  });
});
