import {
  annotateActions,
  appliesToEntityType,
  evaluateEntity,
  TestDefinitionError,
  type EntityEvaluation,
  type TestToRun,
  type EntitySnapshot,
} from "@mdp/metadata-tests";
import { mergeBatch, type MergedBatch, type PushMerge } from "./batch-push";
import { DefinitionCache } from "./definition-cache";
import type { StoredTest } from "./evaluation.store";

/**
 * What runs inside an evaluation thread (loaded through evaluation-thread.cjs): the pure evaluation of already-loaded
 * entities and tests, and for runTest's pushes the merge onto their stored results (batch-push.ts). No I/O: the main
 * thread reads PostgreSQL, writes and replies.
 */

/** One request of a task: its entities, and the tests it names (unset: every ACTIVE test of each entity's type). */
export interface ThreadItem {
  urns: string[];
  testUrns?: string[];
  /**
   * whether failed rules carry the values found (cut): only for a caller who may read the entity, or results to store
   * (unset: none are built)
   */
  withValues?: boolean;
  /**
   * answer the evaluations as JSON text (EvaluationsJson) rather than objects: an item only answered, never pushed.
   * Serialized here, its results cross to the main thread as strings, where a structured clone of every object and
   * a JSON.stringify of each result again cost the main thread more than the evaluation itself.
   */
  json?: boolean;
  /**
   * push the evaluations of `testUrns` (runTest): merged here onto the stored results (batch-push.ts), answered as
   * what to write (MergedBatch and its tally) rather than as evaluations
   */
  merge?: PushMerge;
}

/** How many entities were evaluated and what their tests found: the counts a task row and the metrics keep. */
export interface Tally {
  entities: number;
  passing: number;
  failing: number;
  notApplicable: number;
}

/** An item's evaluations as JSON text (one per urn, in the item's urn order; see ThreadItem.json), and their tally. */
export interface EvaluationsJson {
  json: string[];
  tally: Tally;
}

export interface EvaluationTask {
  /** the results' evaluatedAt */
  at: number;
  tests: StoredTest[];
  /** the items' entities: objects (structured-cloned), or */
  entities?: EntitySnapshot[];
  /** one JSON text of them, parsed here (runTest's batches: one string copy instead of a clone of every object) */
  entitiesJson?: string;
  items: ThreadItem[];
  /** Int32Array slots (see WHERE): where the thread is, read by the main thread's watchdog and after a crash */
  where: SharedArrayBuffer;
  /** Date.now() when the task was handed to the pool: WHERE.startedAt counts from it */
  base: number;
}

/**
 * The slots of EvaluationTask.where; -1 in item means the task has not started. began: when the thread took the task
 * (ms after base), from which the thread time charged to its actor is counted.
 */
export const WHERE = { item: 0, startedAt: 1, entity: 2, test: 3, began: 4, size: 5 } as const;

/** Parsed definitions live as long as the thread: a thread replaced after a limit starts with none. */
const definitions = new DefinitionCache();

/**
 * An item that names (or selects) a test whose stored definition fails validation, as a row written before a
 * definition limit existed does: the test and the parser's message. Returned rather than thrown, so that the
 * request is refused (retrying cannot change a stored definition) and the other items of the task are answered.
 */
export interface InvalidDefinition {
  invalidTest: string;
  message: string;
}

/** An item's push, merged (ThreadItem.merge), with the results' tally (the worker's metrics). */
export interface MergedPush extends MergedBatch {
  tally: Tally;
}

export type ThreadItemResult = EntityEvaluation[] | EvaluationsJson | MergedPush | InvalidDefinition;

export function tallyOf(evaluations: readonly EntityEvaluation[]): Tally {
  const tally = { entities: evaluations.length, passing: 0, failing: 0, notApplicable: 0 };
  for (const e of evaluations) {
    tally.passing += e.passing.length;
    tally.failing += e.failing.length;
    tally.notApplicable += e.notApplicable.length;
  }
  return tally;
}

/**
 * Each item's evaluations, one per urn, in the item's urn order (objects, JSON text: ThreadItem.json, or merged for
 * a push: ThreadItem.merge); or the stored definition it could not parse.
 */
export default function evaluateTask(task: EvaluationTask): ThreadItemResult[] {
  const where = new Int32Array(task.where);
  Atomics.store(where, WHERE.began, Date.now() - task.base);
  const snapshots =
    task.entitiesJson !== undefined ? (JSON.parse(task.entitiesJson) as EntitySnapshot[]) : task.entities!;
  const entities = new Map(snapshots.map((e) => [e.urn, e]));
  const testIndex = new Map(task.tests.map((t, i) => [t.urn, i]));
  const activeIndexes = task.tests.flatMap((t, i) => (t.active ? [i] : []));
  const lacks = new Map(task.tests.flatMap((t) => (t.actionsLack ? [[t.urn, new Set(t.actionsLack)]] : [])));
  const notApplied = new Map(task.tests.flatMap((t) => (t.actionsNotApplied ? [[t.urn, t.actionsNotApplied]] : [])));
  const out: ThreadItemResult[] = [];
  for (let i = 0; i < task.items.length; i++) {
    const item = task.items[i]!;
    Atomics.store(where, WHERE.entity, -1);
    Atomics.store(where, WHERE.test, -1);
    Atomics.store(where, WHERE.startedAt, Date.now() - task.base);
    Atomics.store(where, WHERE.item, i);
    const named = item.testUrns?.map((urn) => testIndex.get(urn)!);
    let invalid: InvalidDefinition | undefined;
    const evaluations = item.urns.map((urn, e) => {
      Atomics.store(where, WHERE.entity, e);
      const entity = entities.get(urn)!;
      const evaluation: EntityEvaluation = { urn, passing: [], failing: [], notApplicable: [], evaluatedAt: task.at };
      const ran = new Map<string, TestToRun>();
      // Test by test, so that a test stopped at a limit can be named (see EvaluationPool).
      for (const t of invalid ? [] : (named ?? activeIndexes)) {
        Atomics.store(where, WHERE.test, t);
        const stored = task.tests[t]!;
        let test: TestToRun;
        try {
          test = definitions.toRun(stored);
        } catch (error) {
          if (!(error instanceof TestDefinitionError)) throw error;
          invalid = { invalidTest: stored.urn, message: error.message };
          break;
        }
        if (!named && !appliesToEntityType(test.definition, entity.entityType)) continue;
        ran.set(test.urn, test);
        const one = evaluateEntity([test], entity, task.at, item.withValues === true);
        evaluation.passing.push(...one.passing);
        evaluation.failing.push(...one.failing);
        evaluation.notApplicable.push(...one.notApplicable);
      }
      // What pushing would do (listed in the answer; the push itself plans again under its locks), the actions the
      // push may not write, or would not apply at all, listed as such.
      if (invalid) return evaluation;
      return annotateActions(
        evaluation,
        entity,
        (test) => ran.get(test)?.definition.actions,
        (test) => lacks.get(test),
        (test) => notApplied.get(test),
      );
    });
    if (invalid) out.push(invalid);
    else if (item.json) out.push({ json: evaluations.map((e) => JSON.stringify(e)), tally: tallyOf(evaluations) });
    else if (item.merge) {
      if (!named) throw new Error("A merged push names the tests it evaluates (testUrns)");
      // Past the evaluation: a limit reached while merging names no entity or test.
      Atomics.store(where, WHERE.entity, -1);
      Atomics.store(where, WHERE.test, -1);
      const merged = mergeBatch(
        evaluations,
        (urn) => entities.get(urn)!,
        new Set(named.map((t) => task.tests[t]!.urn)),
        item.merge,
        named.map((t) => definitions.toRun(task.tests[t]!).definition),
      );
      out.push({ ...merged, tally: tallyOf(evaluations) });
    } else out.push(evaluations);
  }
  return out;
}
