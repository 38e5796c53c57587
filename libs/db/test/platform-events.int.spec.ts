/**
 * The platform-event outbox against real PostgreSQL: an aspect version and its MetadataChangeLog_v1 event commit (or
 * roll back) together; a consumer never reads an event of a transaction still running, and one committed late with a
 * lower id than events already read is read next rather than skipped (the sequencer's commit order); the cursor is
 * one consumer's at a time; pruning keeps what a consumer has yet to read.
 */
import { METADATA_CHANGE_LOG } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import {
  advanceEventCursor,
  AspectRepository,
  eventLag,
  eventsAfter,
  inTransaction,
  lockEventCursor,
  prunePlatformEvents,
  sequencePlatformEvents,
} from "../src";

const CONSUMER = "test-consumer";
const aspects = new AspectRepository();
const write = (urn: string) => ({
  urn,
  entityType: "dataset",
  aspectName: "datasetProperties",
  valueJson: JSON.stringify({ description: urn }),
});

describe("the platform-event outbox", () => {
  let testDb: TestDatabase;
  let db: Database;

  /** One consumer pass (after the sequencer's): the events after its cursor, and the cursor moved past them. */
  const consume = async () => {
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 100));
    return inTransaction(db.pool, async (client) => {
      const cursor = (await lockEventCursor(client, CONSUMER))!;
      const events = await eventsAfter(client, cursor, 100);
      const last = events.at(-1);
      if (last) await advanceEventCursor(client, CONSUMER, last.seq);
      return events.map((e) => e.entityUrn);
    });
  };

  beforeAll(async () => {
    testDb = await createTestDatabase("platform_events");
    db = createDatabase(testDb.url, { poolMax: 6 });
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("writes an event with each aspect version, in its transaction, shaped as DataHub's MetadataChangeLog", async () => {
    await consume(); // from here on
    await inTransaction(db.pool, (client) => aspects.upsert(client, [write("urn:li:dataset:a")], "urn:li:corpuser:w"));
    await expect(
      inTransaction(db.pool, async (client) => {
        await aspects.upsert(client, [write("urn:li:dataset:rolledBack")], "urn:li:corpuser:w");
        throw new Error("the write fails");
      }),
    ).rejects.toThrow("the write fails");
    expect(await consume()).toEqual(["urn:li:dataset:a"]);
    const { rows } = await db.pool.query<{ event_type: string; payload: Record<string, unknown> }>(
      "SELECT event_type, payload FROM platform_event WHERE entity_urn = 'urn:li:dataset:a'",
    );
    expect(rows).toEqual([
      {
        event_type: METADATA_CHANGE_LOG,
        payload: {
          entityUrn: "urn:li:dataset:a",
          entityType: "dataset",
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          version: 1,
          created: { time: expect.any(Number), actor: "urn:li:corpuser:w" },
        },
      },
    ]);
  });

  it("reads no event of a running transaction, and one committed late (a lower id) is read next, not skipped", async () => {
    await consume();
    let commitSlow!: () => void;
    const slowMayCommit = new Promise<void>((resolve) => (commitSlow = resolve));
    let slowWrote!: (id: bigint) => void;
    const slowHasWritten = new Promise<bigint>((resolve) => (slowWrote = resolve));
    // The slow writer takes its event id first, then waits; a quick one commits a higher id meanwhile.
    const slow = inTransaction(db.pool, async (client) => {
      await aspects.upsert(client, [write("urn:li:dataset:slow")], "urn:li:corpuser:w");
      const { rows } = await client.query<{ id: string }>("SELECT max(id)::text AS id FROM platform_event");
      slowWrote(BigInt(rows[0]!.id));
      await slowMayCommit;
    });
    try {
      const slowId = await slowHasWritten;
      await inTransaction(db.pool, (client) =>
        aspects.upsert(client, [write("urn:li:dataset:quick")], "urn:li:corpuser:w"),
      );
      const { rows } = await db.pool.query<{ id: string }>(
        "SELECT id::text FROM platform_event WHERE entity_urn = 'urn:li:dataset:quick'",
      );
      expect(slowId).toBeLessThan(BigInt(rows[0]!.id));
      // The quick event is read; the slow one, still being written, is not.
      expect(await consume()).toEqual(["urn:li:dataset:quick"]);
    } finally {
      commitSlow();
      await slow;
    }
    // Committed after the cursor passed a higher id, it is read next.
    expect(await consume()).toEqual(["urn:li:dataset:slow"]);
    expect(await consume()).toEqual([]);
  });

  it("lets one consumer's pass hold the cursor at a time: another finds it locked and reads nothing", async () => {
    await inTransaction(db.pool, async (holder) => {
      expect(await lockEventCursor(holder, CONSUMER)).not.toBeNull();
      await inTransaction(db.pool, async (other) => expect(await lockEventCursor(other, CONSUMER)).toBeNull());
    });
  });

  it("prunes old events every consumer has read, and keeps those a consumer has yet to read", async () => {
    await consume();
    await inTransaction(db.pool, (client) =>
      aspects.upsert(client, [write("urn:li:dataset:unread")], "urn:li:corpuser:w"),
    );
    await db.pool.query("UPDATE platform_event SET created_at = now() - interval '2 days'");
    expect(await eventLag(db.pool, CONSUMER)).toMatchObject({ events: 1 });
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 100));
    await prunePlatformEvents(db.pool, 1, 1000);
    const left = await db.pool.query<{ entity_urn: string }>("SELECT entity_urn FROM platform_event");
    expect(left.rows.map((r) => r.entity_urn)).toEqual(["urn:li:dataset:unread"]);
    expect(await consume()).toEqual(["urn:li:dataset:unread"]);
    expect(await prunePlatformEvents(db.pool, 1, 1000)).toBe(1);
    expect(await eventLag(db.pool, CONSUMER)).toEqual({ events: 0, oldestMs: 0 });
  });
});
