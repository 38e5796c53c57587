/**
 * The database the EntityChangeEvent_v1 writer tests run against (entity-change-events*.int.spec.ts): a test database
 * of their own, created in beforeAll and dropped in afterAll, and the events they read back. Call it once inside a
 * describe; `db` is set by the time the tests run.
 */
import { ENTITY_CHANGE_EVENT } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import type { EventRow } from "./entity-change-events";

export function startEntityChangeEventsHarness() {
  let testDb: TestDatabase | undefined;
  const ece = {
    // Set in beforeAll below, before any test reads it.
    db: undefined as unknown as Database,
    /** The entity's EntityChangeEvent_v1 rows, oldest first. */
    eventsOf: async (urn: string): Promise<EventRow[]> =>
      (
        await ece.db.pool.query<EventRow>(
          `SELECT entity_urn, category, subject_actor, payload FROM platform_event
          WHERE event_type = $1 AND entity_urn = $2 ORDER BY id`,
          [ENTITY_CHANGE_EVENT, urn],
        )
      ).rows,
  };

  beforeAll(async () => {
    testDb = await createTestDatabase("entity_change_events");
    ece.db = createDatabase(testDb.url, { poolMax: 6 });
  });
  afterAll(async () => {
    await ece.db.close();
    await testDb!.drop();
  });
  return ece;
}
