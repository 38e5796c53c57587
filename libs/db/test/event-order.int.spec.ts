/**
 * Every reader of the platform-event stream reads in position order when positions gain a digit (real PostgreSQL):
 * they answer positions as text, and ordering by that text put 100 before 97, so a read of three after 96 answered
 * 100, 101, 102 and its reader moved past 97–99 without them (evaluation on change, the webhooks' fan-out, a consumer
 * of the whole stream).
 */
import { METADATA_CHANGE_LOG } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { eventsAfter, inTransaction, partitionsEventsAfter, sequencePlatformEvents, webhookEventsAfter } from "../src";

describe("reading the platform-event stream across a digit", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("event_order");
    db = createDatabase(testDb.url, { poolMax: 2 });
    // The next positions are 97 to 102.
    await db.pool.query("SELECT setval('platform_event_position', 96)");
    for (let i = 0; i < 6; i++) {
      await db.pool.query(
        `INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload)
         VALUES ($1, $2, 'dataset', 'ownership', '{}'::jsonb)`,
        [METADATA_CHANGE_LOG, `urn:li:dataset:ordered-${i}`],
      );
    }
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 100));
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("answers the first positions after the one given, in order", async () => {
    const first = ["97", "98", "99"];
    expect((await eventsAfter(db.pool, "96", 3)).map((e) => e.seq)).toEqual(first);
    expect((await webhookEventsAfter(db.pool, "96", 3)).map((e) => e.seq)).toEqual(first);
    const [read] = await partitionsEventsAfter(db.pool, [{ partition: 0, partitions: 1, seq: "96" }], 3, 100, "102");
    expect(read!.events.map((e) => e.seq)).toEqual(first);
    expect(read).toMatchObject({ upTo: "99", more: true });
  });
});
