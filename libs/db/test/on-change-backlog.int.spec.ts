/**
 * An owner's backlog against real PostgreSQL: a batch is its oldest entries across the partitions asked for, in the
 * order of their positions as numbers, whatever their digits.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { backlogOfOwner, carryOver, inTransaction } from "../src";

const OWNER = "urn:li:corpuser:backlog-owner";

describe("backlogOfOwner", () => {
  let testDb: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("on_change_backlog");
    db = createDatabase(testDb.url, { poolMax: 2 });
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("takes the oldest entries by position, not by their text: 9,999,990 before 10,000,001", async () => {
    const entry = (n: number, seq: string) => ({
      ownerUrn: OWNER,
      entityUrn: `urn:li:dataset:e${n}`,
      entityType: "dataset",
      seq,
    });
    await inTransaction(db.pool, async (client) => {
      // The old change waits in partition 3 behind 150 newer ones of more digits, and one in partition 5.
      await carryOver(client, 3, [
        entry(0, "9999990"),
        ...Array.from({ length: 150 }, (_, i) => entry(i + 1, String(10_000_001 + i))),
      ]);
      await carryOver(client, 5, [entry(999, "9999995")]);
    });
    const batch = await backlogOfOwner(db.pool, [3, 5], OWNER, 100);
    expect(batch).toHaveLength(100);
    expect(batch.slice(0, 3).map((e) => [e.partition, e.seq])).toEqual([
      [3, "9999990"],
      [5, "9999995"],
      [3, "10000001"],
    ]);
    expect(batch.map((e) => BigInt(e.seq))).toEqual(batch.map((e) => BigInt(e.seq)).sort((a, b) => (a < b ? -1 : 1)));
  });
});
