import type { Privilege } from "@mdp/core";
import {
  countEntitiesOfTypes,
  entityBatchAfter,
  entityBatchOf,
  entityUrnsAfter,
  EvaluationInputRepository,
  findEvaluatedTest,
  latestAspectsOfEntities,
  type EntityBatch,
  type EvaluatedTestRow,
  latestLsn,
  type Queryable,
  type StaleReads,
} from "@mdp/db";
import type { EvaluationLifecycle } from "@mdp/tasks";
import type { EntitySnapshot, NotApplied } from "@mdp/metadata-tests";

/**
 * A test as stored: its urn, the canonical entity types it selects, its normalized definition (`hash`: see
 * DefinitionCache), and who its actions act for (docs/api.md "Test actions"), through which token, and whether it is
 * suspended.
 */
export interface StoredTest extends EvaluatedTestRow {
  /**
   * Of the privileges its actions need, those a push by the evaluation's caller may not use: what its owner lacks, or
   * the caller when it is not the owner (set by the evaluate handler, which reads grants only for tests with actions):
   * the answer lists those actions as refused.
   */
  actionsLack?: Privilege[];
  /** set when a push by the evaluation's caller runs none of its actions, and why (an INACTIVE test of another) */
  actionsNotApplied?: NotApplied;
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
 * Reads what evaluations need straight from PostgreSQL, every time (libs/db's aspect, metadata_test and evaluation
 * input repositories): nothing here is cached, so a test edited or deleted, or an aspect just ingested, is what the
 * very next evaluation sees.
 */
export class EvaluationStore {
  private readonly input: EvaluationInputRepository;

  constructor(
    private readonly db: Queryable,
    tasks: EvaluationLifecycle,
    /** where a job that writes nothing reads its entities and tests (Database.stale; the primary without) */
    private readonly stale?: StaleReads,
  ) {
    this.input = new EvaluationInputRepository(db, tasks);
  }

  /** Everything an evaluate job needs, in one round trip. An entity with no stored aspect is absent from the map. */
  async loadForEvaluation(request: {
    urns: readonly string[];
    namedTests: readonly string[];
    activeTests: boolean;
    taskIds: readonly string[];
    /** the job pushes results or applies actions: read on the primary, whatever replicas there are */
    writes?: boolean;
    /** the WAL positions of its callers' own recent writes (items' readAfter): a replica must have replayed them */
    readAfter?: readonly (string | undefined)[];
  }): Promise<EvaluationInput> {
    const doc =
      this.stale?.replicated && !request.writes
        ? await this.loadBeside(this.stale, request, latestLsn(request.readAfter ?? []))
        : await this.input.load(request);
    const entities = new Map<string, EntitySnapshot>();
    for (const a of doc.aspects) addAspect(entities, a.urn, a.entityType, a.aspect, a.value);
    return { entities, tests: doc.tests, cancelled: new Set(doc.cancelled), started: new Set(doc.started) };
  }

  /** The entities and tests on a replica (when one has the callers' writes), the tasks' half on the primary. */
  private async loadBeside(
    stale: StaleReads,
    request: {
      urns: readonly string[];
      namedTests: readonly string[];
      activeTests: boolean;
      taskIds: readonly string[];
    },
    after: string | undefined,
  ) {
    const [read, tasks] = await Promise.all([
      stale.read((replica) => this.input.loadEntitiesAndTests(replica.pool, request), { after }),
      this.input.loadTasks(request.taskIds),
    ]);
    return { ...read, ...tasks };
  }

  /** One test by urn, whatever its state; null when it does not exist (deleted). */
  test(urn: string): Promise<StoredTest | null> {
    return findEvaluatedTest(this.db, urn);
  }

  /** How many entities of these types exist (an entity exists when it has at least one aspect). */
  countEntities(entityTypes: readonly string[], replica?: { after?: string }): Promise<number> {
    if (replica && this.stale) return this.stale.read((r) => countEntitiesOfTypes(r.pool, entityTypes), replica);
    return countEntitiesOfTypes(this.db, entityTypes);
  }

  /**
   * The next `limit` entities of these types after `afterUrn` in urn order, with their latest aspects; each batch
   * reads only its own rows however far the walk has got.
   */
  async nextEntities(
    entityTypes: readonly string[],
    afterUrn: string,
    limit: number,
    options: { client?: Queryable; lockFor?: { lock(client: Queryable, urns: readonly string[]): Promise<void> } } = {},
  ): Promise<EntitySnapshot[]> {
    const db = options.client ?? this.db;
    const urns = await entityUrnsAfter(db, entityTypes, afterUrn, limit);
    if (urns.length === 0) return [];
    // Lock before read: the caller's push of these entities then cannot overwrite a fresher push made after this read.
    await options.lockFor?.lock(db, urns);
    const aspects = await latestAspectsOfEntities(db, urns);
    const entities = new Map<string, EntitySnapshot>();
    for (const a of aspects) addAspect(entities, a.urn, a.entityType, a.aspect, a.value);
    return [...entities.values()];
  }

  /**
   * runTest's batch: as nextEntities, the entities as one JSON text for the evaluation thread to parse (EntityBatch).
   * Without a lock, one statement; with one, the urns, their locks, then the read (lock before read, as nextEntities),
   * which also brings the locked aspect's stored values (`aspect`) for the push to merge onto, and what the tests
   * they name, and `testUrns`, select now (`onTypes`).
   */
  async nextBatch(
    entityTypes: readonly string[],
    afterUrn: string,
    limit: number,
    options: {
      client?: Queryable;
      lockFor?: { lockedAspect: string; lock(client: Queryable, urns: readonly string[]): Promise<void> };
      /** with lockFor: the tests the batch is evaluated for, whose on.types come with it (EntityBatch.onTypes) */
      testUrns?: readonly string[];
      /** a run that writes nothing: read on a replica that has replayed `after` (its creator's recent write) */
      replica?: { after?: string };
    } = {},
  ): Promise<EntityBatch> {
    const { replica } = options;
    if (replica && !options.lockFor && this.stale) {
      return this.stale.read((r) => entityBatchAfter(r.pool, entityTypes, afterUrn, limit), replica);
    }
    const db = options.client ?? this.db;
    if (!options.lockFor) return entityBatchAfter(db, entityTypes, afterUrn, limit);
    const urns = await entityUrnsAfter(db, entityTypes, afterUrn, limit);
    if (urns.length > 0) await options.lockFor.lock(db, urns);
    return entityBatchOf(db, urns, { aspectName: options.lockFor.lockedAspect, testUrns: options.testUrns ?? [] });
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
