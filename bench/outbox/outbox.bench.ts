/**
 * bench/outbox: what the platform-event outbox costs a write. Every aspect version is written with its
 * MetadataChangeLog_v1 event in one statement (@mdp/db's AspectRepository.upsert); the floor is the same transaction
 * with the same lock and the same INSERT of the versions, without the event (floor-statement.ts, a copy of the
 * repository's statement less its event). Batches of 1 and of 100 versions, 4 writers at once, rounds alternating.
 * Reported, not judged: what an event costs is the price of a change no consumer can miss
 * (docs/decisions/0007-outbox-event-in-the-writing-statement.md).
 */
import { performance } from "node:perf_hooks";
import { AspectRepository, inTransaction, type VersionedAspectWrite } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import pg from "pg";
import { printReport, type Row } from "../support/report";
import { WRITE_WITHOUT_EVENT } from "./floor-statement";

const CONCURRENCY = 4;
const ROUNDS = 5;
const VERSIONS_PER_ROUND = 8_000;
const repository = new AspectRepository();

/** One round's writes, in batches of `size`, on urns of its own (so each round starts every aspect at version 1). */
function batches(round: string, size: number): VersionedAspectWrite[][] {
  return Array.from({ length: VERSIONS_PER_ROUND / size }, (_, b) =>
    Array.from({ length: size }, (_, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:hive,bench.${round}_${(b * size + i) % 2000},PROD)`,
      entityType: "dataset",
      aspectName: "datasetProperties",
      valueJson: JSON.stringify({ description: `version ${b}`, customProperties: { batch: String(b) } }),
    })),
  );
}

/** Versions per second writing every batch, CONCURRENCY transactions at once. */
async function rate(pool: pg.Pool, items: VersionedAspectWrite[][], write: Write): Promise<number> {
  const queue = [...items];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let batch = queue.shift(); batch; batch = queue.shift()) {
        await inTransaction(pool, (client) => write(client, batch));
      }
    }),
  );
  return VERSIONS_PER_ROUND / ((performance.now() - started) / 1000);
}

type Write = (client: pg.PoolClient, writes: VersionedAspectWrite[]) => Promise<void>;

const withEvent: Write = (client, writes) => repository.upsert(client, writes, "urn:li:corpuser:bench");

const alone: Write = async (client, writes) => {
  await repository.lock(client, writes);
  const seen = new Map<string, number>();
  const ordinals = writes.map((w) => {
    const key = JSON.stringify([w.urn, w.aspectName]);
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n;
  });
  await client.query(WRITE_WITHOUT_EVENT, [
    writes.map((w) => w.urn),
    writes.map((w) => w.aspectName),
    writes.map((w) => w.entityType),
    `[${writes.map((w) => w.valueJson).join(",")}]`,
    ordinals,
    writes.map(() => "urn:li:corpuser:bench"),
    writes.map(() => null),
    writes.map(() => null),
  ]);
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchOutbox(): Promise<void> {
  const db = await createTestDatabase("bench_outbox");
  const pool = new pg.Pool({ connectionString: db.url, max: CONCURRENCY });
  try {
    const rows: Row[] = [];
    let baseline = "";
    for (const size of [1, 100]) {
      const evented: number[] = [];
      const plain: number[] = [];
      const ratios: number[] = [];
      await rate(pool, batches(`warm${size}`, size).slice(0, 20), withEvent);
      await rate(pool, batches(`warmfloor${size}`, size).slice(0, 20), alone);
      // Paired rounds, the order alternating, so a burst of machine noise hits one pair rather than one side.
      for (let round = 0; round < ROUNDS; round++) {
        const mine = batches(`e${size}_${round}`, size);
        const floor = batches(`f${size}_${round}`, size);
        if (round % 2 === 0) {
          plain.push(await rate(pool, floor, alone));
          evented.push(await rate(pool, mine, withEvent));
        } else {
          evented.push(await rate(pool, mine, withEvent));
          plain.push(await rate(pool, floor, alone));
        }
        ratios.push(evented[round]! / plain[round]!);
      }
      const ratio = median(ratios);
      baseline += `${baseline ? "; " : ""}batches of ${size}: ${Math.round(median(plain))} versions/s alone`;
      rows.push({
        name: `aspect versions with their events, batches of ${size}`,
        value: `${Math.round(median(evented))} versions/s`,
        ratio,
        spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
        target: "-",
        met: true,
      });
    }
    printReport("bench/outbox", `the same writes without their events (${CONCURRENCY} writers): ${baseline}`, rows);
    process.stdout.write(`  ratio: median over ${ROUNDS} rounds of each round's pair (lowest–highest round)\n`);
  } finally {
    await pool.end();
    await db.drop();
  }
}
