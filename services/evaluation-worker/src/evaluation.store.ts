import type { Privilege } from "@mdp/core";
import type { Queryable } from "@mdp/db";
import type { EvaluationTasks } from "@mdp/tasks";
import type { EntitySnapshot } from "@mdp/metadata-tests";

/** A test as stored: its urn, the canonical entity types it selects, and its normalized definition. */
export interface StoredTest {
  urn: string;
  onTypes: string[];
  active: boolean;
  /** md5 of the definition's text: equal hashes, equal definitions (see DefinitionCache) */
  hash: string;
  definition: unknown;
  /** who its actions act for (docs/api.md "Test actions"), through which token, and whether it is suspended */
  ownerUrn: string;
  ownerTokenId: string | null;
  suspended: boolean;
  /**
   * Of the privileges its actions need, those its owner lacks (set by the evaluate handler, which reads the owners'
   * grants only for tests with actions): the dry view lists those actions as refused.
   */
  ownerLacks?: Privilege[];
}

/** What one evaluate job needs, read in one statement. */
export interface EvaluationInput {
  entities: Map<string, EntitySnapshot>;
  tests: StoredTest[];
  /** task ids of the job whose rows were cancelled meanwhile (only a caller that got a 504 can have done that) */
  cancelled: Set<string>;
  /** task ids of the job whose rows were waiting (their callers got a 504) and are now active */
  started: Set<string>;
}

/**
 * One row, one JSON document: the aspects of every urn, the tests named plus (when asked) every ACTIVE test of the
 * entities' types, and which of the tasks were cancelled. Built by PostgreSQL, parsed by one JSON.parse, because
 * decoding the same data as a few dozen typed rows costs the worker several times the CPU, on every evaluation.
 * The tasks that have a row already (their callers got a 504) become active: getTaskStatus shows them running, and
 * cancelTask then asks them to stop rather than cancelling outright. Most jobs have no such row, and then nothing is
 * written.
 */
const load = (tasks: EvaluationTasks) => `
  WITH ${tasks.startedCte({ ids: "$4", owner: "$5", leaseMs: "$6" })}
  SELECT json_build_object(
    'aspects', COALESCE((
      SELECT json_agg(json_build_object('urn', l.urn, 'entityType', l.entity_type, 'aspect', l.aspect_name,
                                        'value', l.value))
        FROM (SELECT DISTINCT ON (urn, aspect_name) urn, entity_type, aspect_name, value
                FROM aspect WHERE urn = ANY($1::text[]) ORDER BY urn, aspect_name, version DESC) l), '[]'),
    'tests', COALESCE((
      SELECT json_agg(json_build_object('urn', t.urn, 'onTypes', t.on_types, 'active', t.state = 'ACTIVE',
                                        'hash', md5(t.definition::text), 'definition', t.definition,
                                        'ownerUrn', t.owner_urn, 'ownerTokenId', t.owner_token_id,
                                        'suspended', t.suspended_at IS NOT NULL) ORDER BY t.urn)
        FROM metadata_test t
       WHERE t.urn = ANY($2::text[])
          OR ($3 AND t.state = 'ACTIVE'
              AND t.on_types && ARRAY(SELECT DISTINCT entity_type FROM aspect WHERE urn = ANY($1::text[])))), '[]'),
    'cancelled', COALESCE((SELECT json_agg(id) FROM task WHERE id = ANY($4::text[]) AND state = 'cancelled'), '[]'),
    'started', COALESCE((SELECT json_agg(id) FROM started), '[]')
  )::text AS doc`;

interface LoadDocument {
  aspects: Array<{ urn: string; entityType: string; aspect: string; value: unknown }>;
  tests: StoredTest[];
  cancelled: string[];
  started: string[];
}

/**
 * Reads what evaluations need straight from PostgreSQL, every time: nothing here is cached, so a test edited or
 * deleted, or an aspect just ingested, is what the very next evaluation sees.
 */
export class EvaluationStore {
  private readonly loadText: string;

  constructor(
    private readonly db: Queryable,
    private readonly tasks: EvaluationTasks,
  ) {
    this.loadText = load(tasks);
  }

  /** Everything an evaluate job needs, in one round trip. An entity with no stored aspect is absent from the map. */
  async loadForEvaluation(request: {
    urns: readonly string[];
    namedTests: readonly string[];
    activeTests: boolean;
    taskIds: readonly string[];
  }): Promise<EvaluationInput> {
    const { rows } = await this.db.query<{ doc: string }>({
      name: "evaluation-load", // prepared once per connection: it runs for every evaluate job
      text: this.loadText,
      values: [request.urns, request.namedTests, request.activeTests, request.taskIds, ...this.tasks.leaseValues()],
    });
    const doc = JSON.parse(rows[0]?.doc ?? "{}") as LoadDocument;
    const entities = new Map<string, EntitySnapshot>();
    for (const a of doc.aspects) addAspect(entities, a.urn, a.entityType, a.aspect, a.value);
    return { entities, tests: doc.tests, cancelled: new Set(doc.cancelled), started: new Set(doc.started) };
  }

  /** One test by urn, whatever its state; null when it does not exist (deleted). */
  async test(urn: string): Promise<StoredTest | null> {
    const { rows } = await this.db.query<StoredTest>(
      `SELECT urn, on_types AS "onTypes", state = 'ACTIVE' AS active, md5(definition::text) AS hash, definition,
              owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", suspended_at IS NOT NULL AS suspended
         FROM metadata_test WHERE urn = $1`,
      [urn],
    );
    return rows[0] ?? null;
  }

  /** How many entities of these types exist (an entity exists when it has at least one aspect). */
  async countEntities(entityTypes: readonly string[]): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(
      "SELECT count(DISTINCT urn) AS n FROM aspect WHERE entity_type = ANY($1::text[])",
      [entityTypes],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * The next `limit` entities of these types after `afterUrn` in urn order, with their latest aspects. Keyset
   * pagination walks the primary key (urn first), and an entity type's urns share a prefix, so each batch reads only
   * its own rows however far the walk has got.
   */
  async nextEntities(
    entityTypes: readonly string[],
    afterUrn: string,
    limit: number,
    options: { client?: Queryable; lockFor?: { lock(client: Queryable, urns: readonly string[]): Promise<void> } } = {},
  ): Promise<EntitySnapshot[]> {
    const db = options.client ?? this.db;
    const { rows: batch } = await db.query<{ urn: string }>(
      `SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3`,
      [entityTypes, afterUrn, limit],
    );
    const urns = batch.map((r) => r.urn);
    if (urns.length === 0) return [];
    // Lock before read: the caller's push of these entities then cannot overwrite a fresher push made after this read.
    await options.lockFor?.lock(db, urns);
    const { rows } = await db.query<{ doc: string | null }>(
      `WITH latest AS (
         SELECT l.* FROM unnest($1::text[]) AS b(urn)
          CROSS JOIN LATERAL (
            SELECT DISTINCT ON (a.aspect_name) a.urn, a.entity_type, a.aspect_name, a.value
              FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l)
       SELECT json_agg(json_build_object('urn', urn, 'entityType', entity_type, 'aspect', aspect_name, 'value', value)
                       ORDER BY urn, aspect_name)::text AS doc
         FROM latest`,
      [urns],
    );
    const aspects = JSON.parse(rows[0]?.doc ?? "[]") as LoadDocument["aspects"];
    const entities = new Map<string, EntitySnapshot>();
    for (const a of aspects) addAspect(entities, a.urn, a.entityType, a.aspect, a.value);
    return [...entities.values()];
  }
}

function addAspect(
  entities: Map<string, EntitySnapshot>,
  urn: string,
  entityType: string,
  aspectName: string,
  value: unknown,
): void {
  let entity = entities.get(urn);
  if (!entity) {
    entity = { urn, entityType, aspects: {} };
    entities.set(urn, entity);
  }
  entity.aspects[aspectName] = value;
}
