/**
 * EntityChangeEvent_v1 events of tests, tasks and schedules against real PostgreSQL (docs/events.md): a test result's
 * flip writes one event and an unchanged result none; a truncation's final transition and a schedule's suspension
 * write theirs in their own transaction; payloads stay bounded; listPlatformEventRows' window, scope and `oldest`
 * after pruning.
 */
import { randomUUID } from "node:crypto";
import {
  entityChangePayload,
  inPrismaTransaction,
  insertEntityChangeEvents,
  insertTransitions,
  inTransaction,
  listPlatformEventRows,
  PLATFORM_EVENT_PAYLOAD,
  prunePlatformEvents,
  sequencePlatformEvents,
  suspendIn,
  TaskRepository,
  type ReaderScope,
} from "../src";
import { SYSTEM } from "./support/entity-change-events";
import { startEntityChangeEventsHarness } from "./support/entity-change-events-harness";

describe("EntityChangeEvent_v1 writers", () => {
  const ece = startEntityChangeEventsHarness();
  const { eventsOf } = ece;

  it("writes a TEST_RESULT event when a result flips between pass and fail, none for a first or unchanged one", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,ev.flip,PROD)";
    const test = "urn:li:test:ev-flip";
    const push = (passing: boolean) =>
      inTransaction(ece.db.pool, (client) =>
        insertTransitions(client, [{ urn, test, passing, at: Date.now() }], 1_000),
      );
    await push(true); // first result: no flip
    await push(true); // unchanged
    expect(await eventsOf(urn)).toEqual([]);
    await push(false);
    await push(false);
    await expect(
      inTransaction(ece.db.pool, async (client) => {
        await insertTransitions(client, [{ urn, test, passing: true, at: Date.now() }], 1_000);
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
    const tasks = new TaskRepository(ece.db);
    const create = async (request: Record<string, unknown>) => {
      const id = randomUUID();
      await ece.db.prisma.task.create({
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
      ece.db.prisma.metadataTest.create({
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
    await inPrismaTransaction(ece.db.prisma, (tx) =>
      suspendIn(tx, { kind: "SCHEDULED_TEST", urn: "urn:li:test:ev-suspended" }, "owner lost it", undefined, {
        missingPrivileges: ["MANAGE_TESTS"],
      }),
    );
    await expect(
      inPrismaTransaction(ece.db.prisma, async (tx) => {
        await suspendIn(tx, { kind: "SCHEDULED_TEST", urn: "urn:li:test:ev-rolled-back" }, "x");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    // Suspended already: no second event.
    await inPrismaTransaction(ece.db.prisma, (tx) =>
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
    await insertEntityChangeEvents(ece.db.pool, [change]);
    const stored = await ece.db.pool.query<{ bytes: number }>(
      "SELECT octet_length(payload::text) AS bytes FROM platform_event WHERE entity_urn = 'urn:li:test:ev-bounds'",
    );
    expect(stored.rows[0]!.bytes).toBeLessThanOrEqual(PLATFORM_EVENT_PAYLOAD.maxBytes + 256); // jsonb's spacing
  });

  it("lists a window of the stream for a reader's scope, moving past what it cannot read, and reports oldest", async () => {
    await inTransaction(ece.db.pool, (client) => sequencePlatformEvents(client, 10_000));
    const mine = "urn:li:corpuser:ev-reader";
    const before = await ece.db.pool.query<{ max: string | null }>("SELECT max(seq)::text AS max FROM platform_event");
    const since = before.rows[0]!.max ?? "0";
    await insertEntityChangeEvents(
      ece.db.pool,
      ["urn:li:corpuser:someone", mine, "urn:li:corpuser:someone"].map((subject, i) => ({
        category: "ACCESS_TOKEN",
        operation: "CREATE",
        entityType: "dataHubAccessToken",
        entityUrn: `urn:li:dataHubAccessToken:list-${i}`,
        actorUrn: subject,
        subjectActor: subject,
      })),
    );
    await inTransaction(ece.db.pool, (client) => sequencePlatformEvents(client, 10_000));
    const nothing: ReaderScope = {
      urn: mine,
      mclTests: false,
      mclEntities: false,
      categories: [],
      scheduleTests: false,
      scheduleOther: false,
      subjectCategories: ["ACCESS_TOKEN"], // its own token events: it may list its own tokens
    };
    const page = await listPlatformEventRows(ece.db.pool, { since, count: 10, scan: 10, scope: nothing, filter: {} });
    expect(page.events.map((e) => e.entityUrn)).toEqual(["urn:li:dataHubAccessToken:list-1"]);
    expect(BigInt(page.scannedTo!)).toBe(BigInt(since) + 3n); // past the two it may not read
    const all = await listPlatformEventRows(ece.db.pool, {
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

    await ece.db.pool.query("UPDATE platform_event SET created_at = now() - interval '3 days' WHERE seq <= $1", [
      since,
    ]);
    await ece.db.pool.query("INSERT INTO platform_event_cursor (consumer, seq) VALUES ('ev-test', $1)", [since]);
    expect(await prunePlatformEvents(ece.db.pool, 1, 10_000)).toBeGreaterThan(0);
    const after = await listPlatformEventRows(ece.db.pool, {
      since: "0",
      count: 10,
      scan: 10,
      scope: nothing,
      filter: {},
    });
    expect(after.oldest).toBe((BigInt(since) + 1n).toString());
  });
});
