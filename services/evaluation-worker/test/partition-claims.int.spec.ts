/**
 * The partitions' leases (PartitionClaims, docs/evaluation-on-change.md "Partitions") on a real PostgreSQL: a hung pass
 * lets its partitions lapse to the other workers though its keeper runs, and a claim after the partitions were laid
 * out again takes the new layout's positions, never the old ones the worker held.
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { createDatabase, ensurePartitionLayout, inTransaction, repartitionBacklog, type Database } from "@mdp/db";
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
});
