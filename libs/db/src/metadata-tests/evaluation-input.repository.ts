import type { Queryable } from "../timeseries/timeseries.store";
import type { LatestAspectRow } from "../aspects/aspect.repository";
import type { EvaluatedTestRow } from "./metadata-test.repository";

/**
 * How an evaluate job's tasks that have a row already become active in the same statement: the task table's fragment
 * (a CTE named `started` returning their ids) and its lease parameters, as `EvaluationTaskRows`
 * (tasks/evaluation-tasks.repository.ts) gives them for its lifecycle's owner and lease.
 */
export interface StartedTasksStatement {
  startedCte(params: { ids: string; owner: string; leaseMs: string }): string;
  leaseValues(): readonly unknown[];
}

/** What one evaluate job reads, as PostgreSQL built it. */
export interface EvaluationInputDocument {
  aspects: LatestAspectRow[];
  tests: EvaluatedTestRow[];
  /** task ids of the job whose rows were cancelled */
  cancelled: string[];
  /** task ids of the job whose rows were waiting and are now active */
  started: string[];
}

/** The aspects of every urn ($1) and the tests named ($2) plus, when asked ($3), every ACTIVE test of their types. */
const ENTITIES_AND_TESTS = `
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
              AND t.on_types && ARRAY(SELECT DISTINCT entity_type FROM aspect WHERE urn = ANY($1::text[])))), '[]')`;

/**
 * One row, one JSON document: the aspects of every urn, the tests named plus (when asked) every ACTIVE test of the
 * entities' types, and which of the tasks were cancelled. Built by PostgreSQL, parsed by one JSON.parse, because
 * decoding the same data as a few dozen typed rows costs the worker several times the CPU, on every evaluation.
 * The tasks that have a row already (their callers got a 504) become active: getTaskStatus shows them running, and
 * cancelTask then asks them to stop rather than cancelling outright. Most jobs have no such row, and then nothing is
 * written.
 */
const load = (tasks: StartedTasksStatement) => `
  WITH ${tasks.startedCte({ ids: "$4", owner: "$5", leaseMs: "$6" })}
  SELECT json_build_object(${ENTITIES_AND_TESTS},
    'cancelled', COALESCE((SELECT json_agg(id) FROM task WHERE id = ANY($4::text[]) AND state = 'cancelled'), '[]'),
    'started', COALESCE((SELECT json_agg(id) FROM started), '[]')
  )::text AS doc`;

/** The read half alone, for a read replica (a standby runs no UPDATE, not even of no row). */
const LOAD_ENTITIES_AND_TESTS = `SELECT json_build_object(${ENTITIES_AND_TESTS})::text AS doc`;

/** The task half alone, on the primary, beside a replica's read of the rest. */
const loadTasks = (tasks: StartedTasksStatement) => `
  WITH ${tasks.startedCte({ ids: "$1", owner: "$2", leaseMs: "$3" })}
  SELECT json_build_object(
    'cancelled', COALESCE((SELECT json_agg(id) FROM task WHERE id = ANY($1::text[]) AND state = 'cancelled'), '[]'),
    'started', COALESCE((SELECT json_agg(id) FROM started), '[]')
  )::text AS doc`;

/** The evaluate job's read (aspect, metadata_test and task in one statement): nothing cached, every job reads afresh. */
export class EvaluationInputRepository {
  private readonly loadText: string;
  private readonly loadTasksText: string;

  constructor(
    private readonly db: Queryable,
    private readonly tasks: StartedTasksStatement,
  ) {
    this.loadText = load(tasks);
    this.loadTasksText = loadTasks(tasks);
  }

  /** Everything an evaluate job needs, in one round trip. */
  async load(request: {
    urns: readonly string[];
    namedTests: readonly string[];
    activeTests: boolean;
    taskIds: readonly string[];
  }): Promise<EvaluationInputDocument> {
    const { rows } = await this.db.query<{ doc: string }>({
      name: "evaluation-load", // prepared once per connection: it runs for every evaluate job
      text: this.loadText,
      values: [request.urns, request.namedTests, request.activeTests, request.taskIds, ...this.tasks.leaseValues()],
    });
    return JSON.parse(rows[0]?.doc ?? "{}") as EvaluationInputDocument;
  }

  /**
   * The aspects and tests alone, on `db` (a read replica: the statement writes nothing); `loadTasks` reads the rest on
   * the primary. Two round trips where `load` makes one: only worth it where a replica takes the larger read.
   */
  async loadEntitiesAndTests(
    db: Queryable,
    request: { urns: readonly string[]; namedTests: readonly string[]; activeTests: boolean },
  ): Promise<Pick<EvaluationInputDocument, "aspects" | "tests">> {
    const { rows } = await db.query<{ doc: string }>({
      name: "evaluation-load-entities",
      text: LOAD_ENTITIES_AND_TESTS,
      values: [request.urns, request.namedTests, request.activeTests],
    });
    return JSON.parse(rows[0]?.doc ?? "{}") as Pick<EvaluationInputDocument, "aspects" | "tests">;
  }

  /** Which of the job's tasks were cancelled, and those with a row made active (as `load` does), on the primary. */
  async loadTasks(taskIds: readonly string[]): Promise<Pick<EvaluationInputDocument, "cancelled" | "started">> {
    const { rows } = await this.db.query<{ doc: string }>({
      name: "evaluation-load-tasks",
      text: this.loadTasksText,
      values: [taskIds, ...this.tasks.leaseValues()],
    });
    return JSON.parse(rows[0]?.doc ?? "{}") as Pick<EvaluationInputDocument, "cancelled" | "started">;
  }
}
