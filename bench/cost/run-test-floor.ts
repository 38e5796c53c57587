/**
 * runTest with push's floor: a bare process that walks the entities the test's on.types names in urn order, in
 * batches of BATCH_SIZE (the worker's, DEFAULT_RUN_BATCH_SIZE), each batch's latest aspects read by runTest's batch
 * read (libs/db's entityBatchAfter, a copy; keep them in step), evaluated in this process with @mdp/metadata-tests
 * (with values, as a push evaluates), and each applicable result written as a testResults aspect version (its shape:
 * testResultsOf, bounded) by one multi-row INSERT ... ON CONFLICT per batch. No queue, task row, thread, lock, merge
 * with stored results, action, event, history or run diff: what the product's batch transaction adds is the distance.
 * Each pass (on SIGUSR2) writes versions of its own below every version the product writes (-1, -2, ...): every write
 * is a new row, as the product's are, and the product's latest version stays its own.
 * Prints "run-test floor done <evaluated> <written>" after each pass; exits on SIGTERM.
 */
import pg from "pg";
import {
  boundedTestResults,
  definitionFromJson,
  evaluateEntity,
  testResultsOf,
  type EntitySnapshot,
} from "@mdp/metadata-tests";

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

const WRITE = `
  INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
  SELECT d.urn, 'testResults', $1::int, d.entity_type, d.value::jsonb, 'bench-floor'
    FROM unnest($2::text[], $3::text[], $4::text[]) AS d(urn, entity_type, value)
  ON CONFLICT (urn, aspect_name, version) DO UPDATE SET value = EXCLUDED.value`;

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  const testUrn = process.env.TEST_URN!;
  const batchSize = Number(process.env.BATCH_SIZE);
  const { rows } = await pool.query<{ definition: unknown; onTypes: string[] }>(
    `SELECT definition, on_types AS "onTypes" FROM metadata_test WHERE urn = $1`,
    [testUrn],
  );
  const test = { urn: testUrn, definition: definitionFromJson(rows[0]!.definition) };
  const onTypes = rows[0]!.onTypes;
  let pass = 0;

  async function run(): Promise<void> {
    const version = -++pass;
    let lastUrn = "";
    let evaluated = 0;
    let written = 0;
    for (;;) {
      const { rows: read } = await pool.query<{ keys: string | null; json: string }>(BATCH, [
        onTypes,
        lastUrn,
        batchSize,
      ]);
      const keys = read[0]?.keys ? (JSON.parse(read[0].keys) as { urns: string[] | null }) : null;
      if (!keys?.urns) break;
      const entities = JSON.parse(read[0]!.json) as EntitySnapshot[];
      const at = Date.now();
      const urns: string[] = [];
      const types: string[] = [];
      const values: string[] = [];
      for (const entity of entities) {
        const evaluation = evaluateEntity([test], entity, at, true);
        // As a push: an entity the test did not apply to has no result to store.
        if (evaluation.passing.length + evaluation.failing.length === 0) continue;
        urns.push(entity.urn);
        types.push(entity.entityType);
        values.push(boundedTestResults(testResultsOf(evaluation)).json);
      }
      if (urns.length > 0) await pool.query(WRITE, [version, urns, types, values]);
      evaluated += entities.length;
      written += urns.length;
      lastUrn = keys.urns.at(-1)!;
    }
    process.stdout.write(`run-test floor done ${evaluated} ${written}\n`);
  }

  let running = Promise.resolve();
  process.on("SIGUSR2", () => {
    running = running.then(run).catch((error: unknown) => {
      process.stderr.write(`run-test floor: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    });
  });
  process.on("SIGTERM", () => void pool.end().then(() => process.exit(0)));
  process.stdout.write(`run-test floor ready\n`);
}

void main();
