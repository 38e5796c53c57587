/**
 * The partitions' leases (PartitionClaims, docs/evaluation-on-change.md "Partitions") on a real PostgreSQL: a hung pass
 * lets its partitions lapse to the other workers though its keeper runs, and a claim after the partitions were laid
 * out again takes the new layout's positions, never the old ones the worker held; partitions that read nothing to act
 * on are moved on together, and one taken over meanwhile is forgotten, its position left to its new holder.
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import {
  createDatabase,
  ensurePartitionLayout,
  inTransaction,
  repartitionBacklog,
  sequencePlatformEvents,
  streamEnd,
  type Database,
} from "@mdp/db";
import { startTestEnvironment } from "../../../test/support/test-environment";
import { ON_CHANGE_CONSUMER } from "../src/on-change-settings";
import { PartitionClaims } from "../src/partition-claims";

describe("partition claims", () => {
  let database: Database;
  let drop: () => Promise<void>;
  const logger = createLogger("partition-claims-test", "silent");
  const claimsOf = (holder: string, partitions = 2, leaseMs = 1_000) =>
    new PartitionClaims(database.pool, holder, { partitions, leaseMs, stuckAfterMs: 300 }, async () => {}, logger);

  beforeAll(async () => {
    const environment = await startTestEnvironment("partition_claims");
    drop = environment.drop;
    database = createDatabase(environment.config.DATABASE_URL);
  });
  afterAll(async () => {
    await database.close();
    await drop();
  });

  it("renews nothing while a pass runs past stuckAfterMs: another worker takes its partitions once they lapse", async () => {
    const hung = claimsOf("hung");
    const other = claimsOf("other");
    let endPass!: () => void;
    try {
      await hung.claimForPass();
      expect(hung.ids()).toEqual([0, 1]);
      hung.keep();
      const pass = hung.during(() => new Promise<void>((resolve) => (endPass = resolve)));
      await eventually(
        "the other worker holds the hung one's partitions",
        async () => {
          await other.claimForPass(true);
          return other.ids();
        },
        { until: (ids) => ids.length === 2, timeoutMs: 10_000 },
      );
      endPass();
      await pass;
    } finally {
      await hung.release();
      await other.release();
    }
  });

  it("takes the new layout's position when the partitions were laid out again, not the old one it held", async () => {
    const claims = claimsOf("relaid", 2, 5_000);
    try {
      await claims.claimForPass();
      const [first] = claims.values();
      first!.seq = "500"; // as a pass of the old layout would have moved it
      await inTransaction(database.pool, (client) =>
        ensurePartitionLayout(client, ON_CHANGE_CONSUMER, 3, (c) => repartitionBacklog(c, 3)),
      );
      await claims.claimForPass(true);
      expect(claims.values().map((held) => [held.partitions, held.seq])).toEqual([
        [3, "0"],
        [3, "0"],
        [3, "0"],
      ]);
    } finally {
      await claims.release();
    }
  });

  it("moves the partitions that read nothing to act on in one statement, and forgets one taken over meanwhile", async () => {
    const claims = claimsOf("quiet", 3, 5_000);
    try {
      await inTransaction(database.pool, (client) =>
        ensurePartitionLayout(client, ON_CHANGE_CONSUMER, 3, (c) => repartitionBacklog(c, 3)),
      );
      await claims.claimForPass(true);
      expect(claims.ids()).toEqual([0, 1, 2]);
      // Events of every partition that the pass's filter passes over (pushed results).
      for (let i = 0; i < 30; i++) {
        await database.pool.query(
          `INSERT INTO platform_event (event_type, entity_urn, entity_type, aspect_name, payload)
           VALUES ('MetadataChangeLog_v1', $1, 'dataset', 'testResults', '{}'::jsonb)`,
          [`urn:li:dataset:quiet-${i}`],
        );
      }
      await inTransaction(database.pool, (client) => sequencePlatformEvents(client, 1_000));
      const end = await streamEnd(database.pool);
      const before = claims.values().find((h) => h.partition === 2)!.seq;
      // Another worker took partition 2 over (this one's lease lapsed unnoticed).
      await database.pool.query(
        "UPDATE platform_event_partition SET holder = 'thief' WHERE consumer = $1 AND partition = 2",
        [ON_CHANGE_CONSUMER],
      );
      const query = jest.spyOn(database.pool, "query");
      const reads = await claims.readNext(100, end, { skipAspects: ["testResults"], skipAppSource: "none" });
      // One read of the stream, one move for the quiet partitions.
      expect(query).toHaveBeenCalledTimes(2);
      query.mockRestore();
      expect(reads.map(({ held, read }) => [held.partition, read?.events.length, read?.upTo])).toEqual([
        [0, 0, end],
        [1, 0, end],
        [2, undefined, undefined],
      ]);
      expect(claims.ids()).toEqual([0, 1]);
      const { rows } = await database.pool.query<{ partition: number; seq: string }>(
        "SELECT partition, seq::text AS seq FROM platform_event_partition WHERE consumer = $1 ORDER BY partition",
        [ON_CHANGE_CONSUMER],
      );
      expect(rows).toEqual([
        { partition: 0, seq: end },
        { partition: 1, seq: end },
        { partition: 2, seq: before },
      ]);
    } finally {
      await claims.release();
    }
  });
});
