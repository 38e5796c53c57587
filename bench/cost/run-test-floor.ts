/**
 * runTest with push's floor: a bare process that walks the entities the test's on.types names in urn order, in
 * batches of BATCH_SIZE (the worker's, DEFAULT_RUN_BATCH_SIZE), each batch's latest aspects read by runTest's batch
 * read (libs/db's entityBatchAfter, a copy; keep them in step), evaluated in this process with @mdp/metadata-tests
 * (with values, as a push evaluates), and each applicable result written as a testResults aspect version (its shape:
 * testResultsOf, bounded) by one multi-row INSERT ... ON CONFLICT per batch. No queue, task row, thread, lock, merge
 * with stored results, action, event, history or run diff: what the product's batch transaction adds is the distance.
 * Each pass (on SIGUSR2) writes versions of its own below every version the product writes (-1, -2, ...): every write
 * is a new row, as the product's are, and the product's latest version stays its own.
 *
 * GUARANTEES=1, "the floor with its guarantees": each batch is also one transaction that writes what the product's
 * keeps beside the versions, bare (run-test-guarantees.ts): each version's MetadataChangeLog_v1 outbox row in the
 * INSERT's statement, the history with its flip events in one statement, the run diff's row in one; and once it has
 * committed, the outbox sequencer numbers its events. Its passes write below -1,000,000 (-1,000,001, ...), so that
 * neither floor's passes meet the other's rows.
 * IN_THREADS=1: each batch evaluated in a piscina pool set up as the evaluation worker's (evaluation-pool-settings.ts),
 * its entities' JSON text sent there and its results' texts back (run-test-thread.ts): what keeping the evaluation off
 * the event loop costs a bare process. With it, also what runTest's push keeps per batch beside its guarantees (with
 * GUARANTEES=1): the batch's testResults locks taken before it is read (AspectRepository.lock's statement), the
 * versions of its stored results and the on.types of the tests they name read with it (libs/db's entityBatchOf, a copy), and
 * each result merged onto them in the thread as the product's push merges it (only a change is written). Its
 * versions are written below -2,000,000.
 * Prints "run-test floor done <evaluated> <written> <ms of main-thread garbage collection>" after each pass; exits on
 * SIGTERM.
 */
import pg from "pg";
import path from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { definitionFromJson } from "@mdp/metadata-tests";
import { productLikePool } from "./evaluation-pool-settings";
import { batchResults, type BatchResults, type BatchTask } from "./run-test-thread";
import { openRun, sequenceEvents, withChangeLogEvents, writeHistoryAndRunDiff } from "./run-test-guarantees";

/** libs/db's entityBatchSql over entityBatchAfter's batch (no aspect asked for). */
const BATCH = `
  WITH batch AS (SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3),
  latest AS (
    SELECT l.* FROM batch b
     CROSS JOIN LATERAL (
       SELECT DISTINCT ON (a.aspect_name) a.urn, a.entity_type, a.aspect_name, a.value
         FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l),
  entities AS (
    SELECT urn, min(entity_type) AS entity_type, json_object_agg(aspect_name, value) AS aspects
      FROM latest GROUP BY urn)
  SELECT json_build_object('urns', array_agg(urn ORDER BY urn), 'entityTypes', array_agg(entity_type ORDER BY urn))::text
           AS keys,
         json_agg(json_build_object('urn', urn, 'entityType', entity_type, 'aspects', aspects) ORDER BY urn)::text
           AS json
    FROM entities`;

/** runTest's walk, lock and batch read under the locks (IN_THREADS=1): libs/db's, copies; keep them in step. */
const URNS =
  "SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3";
const LOCK =
  "SELECT count(*)::int AS locked FROM (SELECT pg_advisory_xact_lock(hashtext(k)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k) l";
const BATCH_WITH_STORED = `
  WITH batch AS (SELECT urn FROM unnest($1::text[]) AS u(urn)),
  latest AS (
    SELECT l.* FROM batch b
     CROSS JOIN LATERAL (
       SELECT DISTINCT ON (a.aspect_name) a.urn, a.entity_type, a.aspect_name, a.value, a.version
         FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l),
  entities AS (
    SELECT urn, min(entity_type) AS entity_type, json_object_agg(aspect_name, value) AS aspects,
           (array_agg(value) FILTER (WHERE aspect_name = $2::text))[1] AS kept,
           (array_agg(version) FILTER (WHERE aspect_name = $2::text))[1] AS kept_version
      FROM latest GROUP BY urn)
  SELECT json_build_object('urns', array_agg(urn ORDER BY urn), 'entityTypes', array_agg(entity_type ORDER BY urn))::text
           AS keys,
         json_agg(json_build_object('urn', urn, 'entityType', entity_type, 'aspects', aspects) ORDER BY urn)::text
           AS json,
         COALESCE(json_object_agg(urn, kept_version) FILTER (WHERE kept IS NOT NULL), '{}')::text AS versions,
         (SELECT COALESCE(json_object_agg(t.urn, t.on_types), '{}')::text FROM metadata_test t
           WHERE t.urn = ANY($3::text[]) OR t.urn IN (
             SELECT e.value ->> 'test' FROM entities x CROSS JOIN LATERAL jsonb_array_elements(
               CASE WHEN jsonb_typeof(x.kept -> 'passing') = 'array' THEN x.kept -> 'passing' ELSE '[]' END ||
               CASE WHEN jsonb_typeof(x.kept -> 'failing') = 'array' THEN x.kept -> 'failing' ELSE '[]' END) e)
         ) AS on_types
    FROM entities`;

const WRITE = `
  INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
  SELECT d.urn, 'testResults', $1::int, d.entity_type, d.value::jsonb, 'bench-floor'
    FROM unnest($2::text[], $3::text[], $4::text[]) AS d(urn, entity_type, value)
  ON CONFLICT (urn, aspect_name, version) DO UPDATE SET value = EXCLUDED.value`;

const GUARANTEES = process.env.GUARANTEES === "1";

/** A batch read's row (BATCH, BATCH_WITH_STORED). */
interface BatchRow {
  keys: string | null;
  json: string;
  on_types?: string;
}

/** One batch read and evaluated: its applicable results, in urn order. */
interface Batch extends BatchResults {
  evaluated: number;
  lastUrn: string;
  /** the evaluation's time (epoch ms) */
  at: number;
}

/** the version and its MetadataChangeLog_v1 event in one statement; $5: no appSource, as a push's */
const WRITE_WITH_EVENTS = withChangeLogEvents(WRITE);

/** Milliseconds of this thread's garbage collection since the last call (printed with each pass). */
let gcTotal = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcTotal += entry.duration;
}).observe({ entryTypes: ["gc"] });
let gcReported = 0;
const gcMs = () => {
  const since = gcTotal - gcReported;
  gcReported = gcTotal;
  return since.toFixed(0);
};

async function main(): Promise<void> {
  // Idle connections kept (no reconnect in a pass: a backend's start is PostgreSQL CPU); the process lives between
  // passes however long the other floor's take (the pool's idle sockets were all that kept it alive).
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2, idleTimeoutMillis: 0 });
  const alive = setInterval(() => undefined, 60_000);
  const testUrn = process.env.TEST_URN!;
  const batchSize = Number(process.env.BATCH_SIZE);
  const { rows } = await pool.query<{ definition: unknown; onTypes: string[] }>(
    `SELECT definition, on_types AS "onTypes" FROM metadata_test WHERE urn = $1`,
    [testUrn],
  );
  const test = { urn: testUrn, definition: definitionFromJson(rows[0]!.definition) };
  const onTypes = rows[0]!.onTypes;
  // IN_THREADS=1: each batch evaluated in a pool as the evaluation worker's, its text there and its results' back.
  const threads =
    process.env.IN_THREADS === "1"
      ? productLikePool<BatchTask | null, BatchResults>(
          path.join(__dirname, "run-test-thread.cjs"),
          { test: { urn: testUrn, definition: rows[0]!.definition } },
          1,
        )
      : undefined;
  if (threads) await threads.pool.run(null); // a thread's modules loaded before the first pass
  let pass = 0;

  /** The batch after `afterUrn` read and evaluated: its results to write; null when no entity is left. */
  async function batchAfter(db: pg.Pool | pg.PoolClient, afterUrn: string): Promise<Batch | null> {
    const read = threads
      ? await lockedBatchAfter(db, afterUrn)
      : await db.query<BatchRow>(BATCH, [onTypes, afterUrn, batchSize]);
    const row = read?.rows[0];
    const keys = row?.keys ? (JSON.parse(row.keys) as { urns: string[] | null }) : null;
    if (!keys?.urns) return null;
    const at = Date.now();
    const task = {
      json: row!.json,
      at,
      ...(row!.on_types !== undefined && { merge: { onTypes: row!.on_types } }),
    };
    const results = threads ? await threads.run(task) : batchResults(test, task);
    return { evaluated: keys.urns.length, lastUrn: keys.urns.at(-1)!, at, ...results };
  }

  /** runTest's read of a batch it pushes: the urns, their locks, then the batch with what is stored (IN_THREADS=1). */
  async function lockedBatchAfter(db: pg.Pool | pg.PoolClient, afterUrn: string) {
    const { rows } = await db.query<{ urn: string }>(URNS, [onTypes, afterUrn, batchSize]);
    if (rows.length === 0) return null;
    const urns = rows.map((r) => r.urn);
    await db.query(LOCK, [JSON.stringify(urns.map((urn) => [urn, "testResults"]))]);
    return db.query<BatchRow>(BATCH_WITH_STORED, [urns, "testResults", [testUrn]]);
  }

  async function run(): Promise<void> {
    // Each floor's versions apart from the others' (the threaded one's below the guarantees floor's).
    const version = -++pass - (GUARANTEES ? 1_000_000 : 0) - (threads ? 2_000_000 : 0);
    let lastUrn = "";
    let evaluated = 0;
    let written = 0;
    // With guarantees: one client for the batches' transactions, and the pass's own run diff row and history pairs.
    const client = GUARANTEES ? await pool.connect() : null;
    const guaranteed = {
      runId: `bench-floor-${process.pid}-${pass}`,
      historyTestUrn: `${testUrn}-bench-floor-${process.pid}-${pass}`,
    };
    try {
      if (client) await openRun(client, guaranteed, new Date());
      for (;;) {
        const batch = client ? await guaranteedBatch(client, lastUrn) : await batchAfter(pool, lastUrn);
        if (!batch) break;
        if (!client && batch.urns.length > 0) await pool.query(WRITE, [version, batch.urns, batch.types, batch.values]);
        evaluated += batch.evaluated;
        written += batch.urns.length;
        lastUrn = batch.lastUrn;
      }
    } finally {
      client?.release();
    }
    await new Promise(setImmediate); // the pass's last collections reported to the observer
    process.stdout.write(`run-test floor done ${evaluated} ${written} ${gcMs()}\n`);

    /** One batch read and written in a transaction with its guarantees, then the sequencer's numbering of its events. */
    async function guaranteedBatch(c: pg.PoolClient, afterUrn: string): Promise<Batch | null> {
      await c.query("BEGIN");
      let batch: Batch | null;
      try {
        batch = await batchAfter(c, afterUrn);
        if (batch && batch.urns.length > 0) {
          await c.query(WRITE_WITH_EVENTS, [version, batch.urns, batch.types, batch.values, null]);
          await writeHistoryAndRunDiff(c, guaranteed, batch, batch.at);
        }
        await c.query("COMMIT");
      } catch (error) {
        await c.query("ROLLBACK");
        throw error;
      }
      if (batch && batch.urns.length > 0) await sequenceEvents(c);
      return batch;
    }
  }

  let running = Promise.resolve();
  process.on("SIGUSR2", () => {
    running = running
      .then(() => void gcMs()) // the pass's collections only, not those at rest between passes
      .then(run)
      .catch((error: unknown) => {
        process.stderr.write(`run-test floor: ${error instanceof Error ? error.stack : String(error)}\n`);
        process.exit(1);
      });
  });
  process.on("SIGTERM", () => {
    clearInterval(alive);
    void pool.end().then(() => process.exit(0));
  });
  process.stdout.write(`run-test floor ready\n`);
}

void main();
