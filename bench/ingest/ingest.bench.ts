/**
 * bench/ingest: rows per second through ingestProposalBatch (1,000 time-series rows per request, over real HTTP into
 * the partitioned store) against a plain multi-row INSERT of the same rows by a pg client into a plain table with the
 * same columns and indexes, same concurrency, in the same run. Target: >= 0.5x.
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitUntilReady } from "../../test/support/services";
import { productionSetup } from "../support/production";
import { printReport } from "../support/report";

const ROWS_PER_REQUEST = 1000;
const REQUESTS = 40;
const CONCURRENCY = 4;
const ROUNDS = 5;
const production = productionSetup();
const headers = production.systemClient();

interface Row {
  urn: string;
  timestampMillis: number;
  value: string;
}

function batches(round: number): Row[][] {
  const start = Date.UTC(2026, 6, 1) + round * 7 * 86_400_000;
  return Array.from({ length: REQUESTS }, (_, r) =>
    Array.from({ length: ROWS_PER_REQUEST }, (_, i) => {
      const timestampMillis = start + (r * ROWS_PER_REQUEST + i) * 10_000; // ~4.6 days of rows per round
      return {
        urn: `urn:li:dataset:(urn:li:dataPlatform:hive,db.table${i % 200},PROD)`,
        timestampMillis,
        value: JSON.stringify({ timestampMillis, rowCount: i * 7, columnCount: i % 40 }),
      };
    }),
  );
}

/** Runs `work` over the items with at most CONCURRENCY at once; returns rows per second. */
async function rate(items: Row[][], work: (rows: Row[]) => Promise<void>): Promise<number> {
  const queue = [...items];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let rows = queue.shift(); rows; rows = queue.shift()) await work(rows);
    }),
  );
  return (items.length * ROWS_PER_REQUEST) / ((performance.now() - started) / 1000);
}

export async function benchIngest(): Promise<void> {
  const db = await createTestDatabase("bench_ingest");
  const port = await freePort();
  const gateway = startService("gateway", {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-ingest"),
    PORT: String(port),
    LOG_LEVEL: "warn",
  });
  const pool = new pg.Pool({ connectionString: db.url, max: CONCURRENCY });
  try {
    await waitUntilReady(`http://127.0.0.1:${port}`, gateway);
    await pool.query(`CREATE TABLE bench_plain (urn TEXT NOT NULL, timestamp_millis BIGINT NOT NULL, value JSONB NOT NULL,
                      ingested_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP)`);
    await pool.query("CREATE INDEX ON bench_plain (timestamp_millis)");
    await pool.query("CREATE INDEX ON bench_plain (urn, timestamp_millis DESC)");

    // Request bodies are serialized before the clock starts: the client's work is not what is measured.
    const bodies = new Map<Row[], string>();
    const prepare = (items: Row[][]) => {
      for (const rows of items) {
        const proposals = rows.map((r) => ({
          entityType: "dataset",
          entityUrn: r.urn,
          aspectName: "datasetProfile",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: r.value },
        }));
        bodies.set(rows, JSON.stringify({ proposals }));
      }
      return items;
    };
    const viaApi = async (rows: Row[]) => {
      const res = await fetch(`http://127.0.0.1:${port}/gms/aspects?action=ingestProposalBatch`, {
        method: "POST",
        headers,
        body: bodies.get(rows)!,
      });
      if (res.status !== 200) throw new Error(`ingest failed: ${await res.text()}`);
    };
    const viaInsert = async (rows: Row[]) => {
      const params: unknown[] = [];
      const tuples = rows.map((r, i) => {
        params.push(r.urn, r.timestampMillis, r.value);
        return `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`;
      });
      await pool.query(`INSERT INTO bench_plain (urn, timestamp_millis, value) VALUES ${tuples.join(", ")}`, params);
    };

    const api: number[] = [];
    const plain: number[] = [];
    const ratios: number[] = [];
    await rate(prepare(batches(-20).slice(0, 4)), viaApi); // warm-up: partitions, JIT (days in the past, as rows must be)
    // Paired rounds, the order alternating, so a burst of machine noise hits one pair rather than one side.
    for (let round = 0; round < ROUNDS; round++) {
      const items = prepare(batches(round));
      if (round % 2 === 0) {
        plain.push(await rate(items, viaInsert));
        api.push(await rate(items, viaApi));
      } else {
        api.push(await rate(items, viaApi));
        plain.push(await rate(items, viaInsert));
      }
      ratios.push(api[round]! / plain[round]!);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(ratios);
    printReport(
      "bench/ingest",
      `plain multi-row INSERT (1000 rows/statement, ${CONCURRENCY} clients): ${Math.round(median(plain))} rows/s`,
      [
        {
          name: `ingestProposalBatch (1000 rows/request, ${CONCURRENCY} at once)`,
          value: `${Math.round(median(api))} rows/s`,
          ratio,
          spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
          target: ">= 0.5",
          met: ratio >= 0.5,
        },
      ],
    );
    process.stdout.write(`  ratio: median over ${ROUNDS} rounds of each round's pair (lowest–highest round)\n`);
  } finally {
    await gateway.stop();
    await pool.end();
    await db.drop();
  }
}
