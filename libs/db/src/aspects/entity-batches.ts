import type { Queryable } from "../timeseries/timeseries.store";

/**
 * A batch of entities with their latest aspects, as runTest hands it to an evaluation thread: the urns and types in
 * urn order for the main thread (push, progress), and the entities themselves as one JSON text (`[{urn, entityType,
 * aspects: {name: value}}]`, the EntitySnapshot shape), which the thread parses itself. A string crosses to a thread
 * as one copy, where the parsed objects cost a structured clone there and back plus a JSON.parse on the main thread.
 */
export interface EntityBatch {
  urns: string[];
  entityTypes: string[];
  json: string;
  /**
   * Asked for by entityBatchOf's `stored`: the versions of that aspect's latest values, as one JSON text
   * `{urn: version}` (VersionedAspectWrite.currentVersion; the values themselves are among the entities' aspects), read
   * in the same statement as the batch, so under the same locks
   */
  versions?: string;
  /**
   * with `versions`: the entity types that each test named in those values (testResults entries' `test`), or asked
   * for, selects now (its on.types), as one JSON text `{testUrn: [type]}`; a test that does not exist is absent
   */
  onTypes?: string;
}

const EMPTY_BATCH: EntityBatch = { urns: [], entityTypes: [], json: "[]" };

/**
 * The latest aspects of the urns `batch` selects (its text: a CTE yielding `urn`), as one EntityBatch row; with
 * `aspectParam` (the placeholder of a testResults-shaped aspect's name) and `testsParam` (of test urns), that aspect's
 * `versions` and `onTypes` too. Entries that are not `{test: string}` name no test (readTestResults drops them: the
 * aspect can arrive through ingestion, written by anything).
 */
const entityBatchSql = (batch: string, stored?: { aspectParam: string; testsParam: string }) => {
  const aspectParam = stored?.aspectParam;
  const kept = aspectParam
    ? `, (array_agg(value) FILTER (WHERE aspect_name = ${aspectParam}::text))[1] AS kept,
         (array_agg(version) FILTER (WHERE aspect_name = ${aspectParam}::text))[1] AS kept_version`
    : "";
  const storedColumns = stored
    ? `, COALESCE(json_object_agg(urn, kept_version) FILTER (WHERE kept IS NOT NULL), '{}')::text AS versions,
         (SELECT COALESCE(json_object_agg(t.urn, t.on_types), '{}')::text FROM metadata_test t
           WHERE t.urn = ANY(${stored.testsParam}::text[]) OR t.urn IN (
             SELECT e.value ->> 'test' FROM entities x CROSS JOIN LATERAL jsonb_array_elements(
               CASE WHEN jsonb_typeof(x.kept -> 'passing') = 'array' THEN x.kept -> 'passing' ELSE '[]' END ||
               CASE WHEN jsonb_typeof(x.kept -> 'failing') = 'array' THEN x.kept -> 'failing' ELSE '[]' END) e)
         ) AS on_types`
    : "";
  return `
  WITH batch AS (${batch}),
  latest AS (
    SELECT l.* FROM batch b
     CROSS JOIN LATERAL (
       SELECT DISTINCT ON (a.aspect_name) a.urn, a.entity_type, a.aspect_name, a.value${aspectParam ? ", a.version" : ""}
         FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l),
  entities AS (
    SELECT urn, min(entity_type) AS entity_type, json_object_agg(aspect_name, value) AS aspects${kept}
      FROM latest GROUP BY urn)
  SELECT json_build_object('urns', array_agg(urn ORDER BY urn), 'entityTypes', array_agg(entity_type ORDER BY urn))::text
           AS keys,
         json_agg(json_build_object('urn', urn, 'entityType', entity_type, 'aspects', aspects) ORDER BY urn)::text
           AS json${storedColumns}
    FROM entities`;
};

/** entityBatchSql's row: `keys` is `{urns, entityTypes}` (null arrays when no entity was read). */
interface BatchRow {
  keys: string | null;
  json: string;
  versions?: string;
  on_types?: string;
}

/**
 * The batch's row as an EntityBatch: the urns and types come as one JSON text (JSON.parse is native, where pg parses
 * a text[] of a thousand urns character by character in JavaScript); no row, or no entity: `empty`.
 */
function batchOf(row: BatchRow | undefined, empty: EntityBatch): EntityBatch {
  if (!row?.keys) return empty;
  const keys = JSON.parse(row.keys) as { urns: string[] | null; entityTypes: string[] };
  if (!keys.urns) return empty;
  const batch: EntityBatch = { urns: keys.urns, entityTypes: keys.entityTypes, json: row.json };
  if (row.versions !== undefined) batch.versions = row.versions;
  if (row.on_types !== undefined) batch.onTypes = row.on_types;
  return batch;
}

/**
 * The next `limit` entities of these types after `afterUrn` (as entityUrnsAfter) with their latest aspects, in one
 * statement: runTest's read of a batch it does not lock (push false).
 */
export async function entityBatchAfter(
  db: Queryable,
  entityTypes: readonly string[],
  afterUrn: string,
  limit: number,
): Promise<EntityBatch> {
  const { rows } = await db.query<BatchRow>(
    entityBatchSql(
      "SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3",
    ),
    [entityTypes, afterUrn, limit],
  );
  return batchOf(rows[0], EMPTY_BATCH);
}

/**
 * The latest aspects of these entities as an EntityBatch (those with no aspect left are absent); with `stored`, the
 * `versions` of that testResults-shaped aspect's values, and the `onTypes` of the tests they name and of
 * `stored.testUrns` (runTest with push: what its push merges onto, read under the batch's locks).
 */
export async function entityBatchOf(
  db: Queryable,
  urns: readonly string[],
  stored?: { aspectName: string; testUrns: readonly string[] },
): Promise<EntityBatch> {
  const empty = stored === undefined ? EMPTY_BATCH : { ...EMPTY_BATCH, versions: "{}", onTypes: "{}" };
  if (urns.length === 0) return empty;
  const from = "SELECT urn FROM unnest($1::text[]) AS u(urn)";
  const { rows } =
    stored === undefined
      ? await db.query<BatchRow>(entityBatchSql(from), [urns])
      : await db.query<BatchRow>(entityBatchSql(from, { aspectParam: "$2", testsParam: "$3" }), [
          urns,
          stored.aspectName,
          stored.testUrns,
        ]);
  return batchOf(rows[0], empty);
}
