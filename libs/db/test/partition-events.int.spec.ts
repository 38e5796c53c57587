/**
 * partitionEventsAfter against real PostgreSQL: with a filter of aspect changes, the events outside it (a push's
 * testResults, test actions' writes, EntityChangeEvent_v1) are passed over by the query, the position still moves past
 * them, and `more` says whether the partition has events past what was read.
 */
import { METADATA_CHANGE_LOG } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import {
  inTransaction,
  partitionEventsAfter,
  partitionOfSql,
  partitionsEventsAfter,
  sequencePlatformEvents,
  streamEnd,
  type Queryable,
} from "../src";

const ONE = { partition: 0, partitions: 1 };
const ONLY = { skipAspects: ["testResults"], skipAppSource: "metadataTestActions" };

describe("partitionEventsAfter", () => {
  let testDb: TestDatabase;
  let db: Database;

  /** Writes and sequences events of these (urn, aspect name, appSource, event type); answers their positions. */
  const events = async (
    rows: Array<{ urn: string; aspect: string | null; appSource?: string; type?: string }>,
  ): Promise<string[]> => {
    const before = await streamEnd(db.pool);
    await inTransaction(db.pool, async (client) => {
      for (const row of rows) {
        const payload = row.appSource ? { systemMetadata: { properties: { appSource: row.appSource } } } : {};
        await client.query(
          `INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload)
           VALUES ($1, $2, 'dataset', $3, $4::jsonb)`,
          [row.type ?? METADATA_CHANGE_LOG, row.urn, row.aspect, JSON.stringify(payload)],
        );
      }
    });
    await inTransaction(db.pool, (client) => sequencePlatformEvents(client, 10_000));
    return rows.map((_, i) => String(BigInt(before) + BigInt(i + 1)));
  };

  beforeAll(async () => {
    testDb = await createTestDatabase("partition_events");
    db = createDatabase(testDb.url, { poolMax: 2 });
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("reads only the aspect changes the filter keeps, moving past the others", async () => {
    const start = await streamEnd(db.pool);
    const seqs = await events([
      { urn: "urn:li:dataset:a", aspect: "testResults" },
      { urn: "urn:li:dataset:b", aspect: "datasetProperties" },
      { urn: "urn:li:dataset:c", aspect: "globalTags", appSource: "metadataTestActions" },
      { urn: "urn:li:dataset:d", aspect: null, type: "EntityChangeEvent_v1" },
      { urn: "urn:li:dataset:e", aspect: "ownership", appSource: "ingestion" },
      { urn: "urn:li:dataset:f", aspect: "testResults" },
    ]);
    const end = await streamEnd(db.pool);
    const read = await partitionEventsAfter(db.pool, ONE, start, 10, 100, end, ONLY);
    expect(read.events.map((e) => [e.seq, e.entityUrn])).toEqual([
      [seqs[1], "urn:li:dataset:b"],
      [seqs[4], "urn:li:dataset:e"],
    ]);
    expect(read).toMatchObject({ upTo: end, more: false });
    // Without a filter, every event.
    expect((await partitionEventsAfter(db.pool, ONE, start, 10, 100, end)).events).toHaveLength(6);
  });

  it("says there is more when the limit is reached or the window ends before the stream does", async () => {
    const start = await streamEnd(db.pool);
    const seqs = await events([
      { urn: "urn:li:dataset:a", aspect: "testResults" },
      { urn: "urn:li:dataset:a", aspect: "testResults" },
      { urn: "urn:li:dataset:a", aspect: "testResults" },
      { urn: "urn:li:dataset:b", aspect: "datasetProperties" },
      { urn: "urn:li:dataset:c", aspect: "datasetProperties" },
    ]);
    const end = await streamEnd(db.pool);
    // A window of three positions: only pushed results in it, none read, and the rest of the stream ahead.
    expect(await partitionEventsAfter(db.pool, ONE, start, 10, 3, end, ONLY)).toEqual({
      events: [],
      upTo: seqs[2],
      more: true,
    });
    // The limit reached: up to the last event read, more to come.
    const limited = await partitionEventsAfter(db.pool, ONE, seqs[2]!, 1, 100, end, ONLY);
    expect(limited.events.map((e) => e.seq)).toEqual([seqs[3]]);
    expect(limited).toMatchObject({ upTo: seqs[3], more: true });
    const last = await partitionEventsAfter(db.pool, ONE, seqs[3]!, 1, 100, end, ONLY);
    expect(last.events.map((e) => e.seq)).toEqual([seqs[4]]);
    expect(last).toMatchObject({ upTo: seqs[4], more: true });
    expect(await partitionEventsAfter(db.pool, ONE, end, 1, 100, end, ONLY)).toEqual({
      events: [],
      upTo: end,
      more: false,
    });
  });

  it("reads several partitions, each from its own position, in one statement while their positions are close", async () => {
    const layout = 4;
    const urns = Array.from({ length: 40 }, (_, i) => `urn:li:dataset:many-${i}`);
    const { rows } = await db.pool.query<{ urn: string; partition: number }>(
      `SELECT u AS urn, ${partitionOfSql("u", "$2")} AS partition FROM unnest($1::text[]) AS u`,
      [urns, layout],
    );
    const partitionOf = new Map(rows.map((r) => [r.urn, r.partition]));
    const start = await streamEnd(db.pool);
    const seqs = await events(urns.map((urn, i) => ({ urn, aspect: i % 5 === 0 ? "testResults" : "ownership" })));
    const end = await streamEnd(db.pool);
    const kept = urns.map((urn, i) => ({ urn, seq: seqs[i]!, kept: i % 5 !== 0 })).filter((e) => e.kept);
    const expected = (partition: number, after: string, limit: number) =>
      kept.filter((e) => partitionOf.get(e.urn) === partition && BigInt(e.seq) > BigInt(after)).slice(0, limit);
    // Partition 1 has read further than the others already.
    const positions = [start, seqs[10]!, start, start];
    const statements: string[] = [];
    const counting: Queryable = {
      query: ((text: string, values?: unknown[]) => {
        statements.push(text);
        return db.pool.query(text, values);
      }) as Queryable["query"],
    };
    const held = positions.map((seq, partition) => ({ partition, partitions: layout, seq }));
    const reads = await partitionsEventsAfter(counting, held, 3, 100, end, ONLY);
    expect(statements).toHaveLength(1);
    reads.forEach((read, partition) => {
      const want = expected(partition, positions[partition]!, 3);
      expect(read.events.map((e) => [e.seq, e.entityUrn])).toEqual(want.map((e) => [e.seq, e.urn]));
      // Each partition's own limit: full, up to its last event and more to come; else up to the end.
      if (want.length === 3) expect(read).toMatchObject({ upTo: want[2]!.seq, more: true });
      else expect(read).toMatchObject({ upTo: end, more: false });
    });
    // Positions more than a window apart are read apart, each no further than its own window.
    statements.length = 0;
    const apart = [
      { partition: 0, partitions: layout, seq: start },
      { partition: 2, partitions: layout, seq: seqs[30]! },
    ];
    const [first, second] = await partitionsEventsAfter(counting, apart, 100, 10, end, ONLY);
    expect(statements).toHaveLength(2);
    expect(first!.upTo).toBe(String(BigInt(start) + 10n));
    expect(first!.events.map((e) => e.seq)).toEqual(
      expected(0, start, 100)
        .filter((e) => BigInt(e.seq) <= BigInt(start) + 10n)
        .map((e) => e.seq),
    );
    expect(second!.events.map((e) => e.seq)).toEqual(expected(2, seqs[30]!, 100).map((e) => e.seq));
    expect(second).toMatchObject({ upTo: end, more: false });
  });
});
