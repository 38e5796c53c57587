import path from "node:path";
import v8 from "node:v8";
import { Piscina } from "piscina";
import type { EntityEvaluation, EntitySnapshot } from "@mdp/metadata-tests";
import type { StoredTest } from "./evaluation.store";
import {
  WHERE,
  type EvaluationsJson,
  type EvaluationTask,
  type MergedPush,
  type ThreadItem,
  type ThreadItemResult,
} from "./evaluation-thread";
import { JobShare, ThreadShare } from "./fair-share";

export interface PoolSettings {
  /** EVALUATION_THREADS: threads that evaluate; a thread stopped at a limit is replaced */
  threads: number;
  /** EVALUATION_MEMORY_LIMIT_MB: the heap (old generation) one thread may grow to */
  memoryLimitMb: number;
  /** EVALUATION_TIME_LIMIT_MS: how long one request's (or one runTest batch's) evaluation may run */
  timeLimitMs: number;
  /**
   * tasks that may wait for a thread: a task per actor of each job the worker runs at once, bounded as if each
   * request were one (EVALUATION_CONCURRENCY × the most requests in one job, see evaluationHandler)
   */
  maxQueue: number;
  /** EVALUATION_CONCURRENCY: the jobs the worker runs at once, shared between actors by `jobs` (default: 8) */
  jobs?: number;
}

/**
 * The most threads one actor's evaluations hold at once: all but one, so that another actor's request always finds a
 * thread (or the next one free) however much one actor keeps in flight; at least 1.
 */
export function threadsPerActor(threads: number): number {
  return Math.max(1, threads - 1);
}

type Balancer = NonNullable<ConstructorParameters<typeof Piscina>[0]>["loadBalancer"] & {};
type BalancedThread = Parameters<Balancer>[1][number];

/**
 * piscina's default balancer hands a task to any thread without one, including a thread that replaces one stopped at
 * a limit and is still loading its modules (hundreds of ms): a request would wait for that load while another thread
 * is free. This one picks only threads that are ready and idle; a task no such thread takes waits in the queue, and
 * piscina distributes it again when a thread becomes ready or finishes a task. Readiness is piscina's own flag (on
 * its worker record, behind the kWorkerData symbol); should a later piscina not expose it, every thread counts as
 * ready, as piscina's default does.
 */
const readyIdleThread: Balancer = (_task, threads) => {
  for (const thread of threads) if (thread.currentUsage === 0 && isReady(thread)) return thread;
  return null;
};

function isReady(thread: BalancedThread): boolean {
  const record = threadRecord(thread) as { isReady?: () => boolean } | undefined;
  return typeof record?.isReady === "function" ? record.isReady() : true;
}

/** piscina's own record of a thread (its thread handles are new objects at each call), or the handle itself. */
function threadRecord(thread: object): object {
  const data = Object.getOwnPropertySymbols(thread).find((symbol) => symbol.description === "Piscina.kWorkerData");
  const record = data && (thread as Record<symbol, object | undefined>)[data];
  return record ?? thread;
}

/** A thread's young generation, fixed so that the memory budget is the documented sum (see docs/limits.md). */
export const YOUNG_GENERATION_MB = 16;

/**
 * A thread's semi-space (V8 splits the young generation into two of them and a large-object space of the same size),
 * given from the start. Started at V8's default of 1 MB, it rarely grows under evaluation's short-lived garbage: a
 * thread scavenged every 2 MB allocated, about 100 scavenges per bench/cost evaluate run against 35 with this. Its
 * memory is within YOUNG_GENERATION_MB, which the budget counts already. A V8 flag is read when an isolate is created:
 * set before the pool starts, it sizes every thread the process starts from then on (the pool's: it starts no other),
 * not the main isolate, which exists already.
 */
const THREAD_SEMI_SPACE_MB = Math.floor(YOUNG_GENERATION_MB / 3);

/** An evaluation stopped at the time or memory limit. Retrying cannot help: it would be stopped again. */
export class EvaluationLimitError extends Error {
  override readonly name = "EvaluationLimitError";
  constructor(
    message: string,
    readonly limit: "time" | "memory",
    /** how many of its entities were evaluated before the one it stopped at */
    readonly entitiesBefore: number,
  ) {
    super(message);
  }
}

/**
 * A request that names (or selects) a test whose stored definition fails validation: a row written before a
 * definition limit existed. Retrying cannot help: the definition stays as it is until the test is updated.
 */
export class StoredDefinitionError extends Error {
  override readonly name = "StoredDefinitionError";
  constructor(
    /** the test whose definition is refused */
    readonly testUrn: string,
    /** the parser's message: "Failed to validate test definition: <where>: <what>, more than the limit of <n>" */
    readonly reason: string,
  ) {
    super(`Test ${testUrn} cannot be evaluated: its stored definition is refused. ${reason}`);
  }
}

export type PoolOutcome = EntityEvaluation[] | EvaluationLimitError | StoredDefinitionError;

/**
 * The outcome of an item: JSON text (EvaluationsJson) only where the item asked for it (ThreadItem.json), a merged
 * push only where it may (ThreadItem.merge).
 */
export type OutcomeOf<I extends ThreadItem> = I extends { json: true }
  ? PoolOutcome | EvaluationsJson
  : "merge" extends keyof I
    ? PoolOutcome | MergedPush
    : PoolOutcome;

export interface PoolInput {
  /**
   * the user the evaluation is for (the system client acting for a user counts as that user): the pool shares its
   * threads between actors (see ThreadShare); unset: one shared "unattributed" actor
   */
  actor?: string;
  at: number;
  tests: StoredTest[];
  /**
   * the entities by urn, or (runTest's batches) as one JSON text of EntitySnapshots that the thread parses: a string
   * crosses to the thread as one copy, not as a structured clone of every object (see EntityBatch of @mdp/db)
   */
  entities: ReadonlyMap<string, EntitySnapshot> | { json: string };
}

/**
 * The threads metadata tests are evaluated in (piscina). Evaluation is synchronous CPU work over data already read:
 * on the main thread one slow or hostile evaluation (a definition whose evaluation fans out, a pathological pattern)
 * held the event loop, so every other caller's evaluation waited, BullMQ lost its lock renewals and re-ran the stalled
 * jobs elsewhere, and a hostile definition could grow the process to gigabytes. Here each task runs in a thread with
 * a heap limit (resourceLimits) and is stopped by aborting it (piscina terminates and replaces the thread, which even
 * a RegExp in the middle of backtracking cannot delay), while the main thread stays free to read, push, reply and renew
 * locks. piscina, rather than worker_threads by hand: a maintained pool with abort, replacement, resource limits and a
 * bounded queue built in.
 *
 * A job's requests go to one thread as one task (one structured-clone round trip in the common case), and the time
 * limit is per request: the thread records which request, entity and test it is at, and a watchdog on the main thread
 * stops the task only when one request has run for the whole limit. The request it stopped at (or that exhausted the
 * heap) is refused naming the limit and the test; the job's other requests are run again in a fresh task, so only
 * the request that caused it is refused.
 *
 * Threads are shared between actors (fair-share.ts): one actor's tasks hold at most threadsPerActor threads at once,
 * and the next free thread goes round-robin to the actors with tasks waiting, so an actor who keeps slow evaluations
 * in flight delays another actor's request by no more than that request's own wait for the thread it leaves free.
 */
export class EvaluationPool {
  private readonly pool: Piscina<EvaluationTask, ThreadItemResult[]>;
  /** which actor's task goes to the next free thread: at most threadsPerActor each, round-robin */
  private readonly threadShare: ThreadShare;
  /** the worker's job slots by actor: a job handler takes one before it loads anything (see JobShare) */
  readonly jobShare: JobShare;

  constructor(readonly settings: PoolSettings) {
    v8.setFlagsFromString(`--min-semi-space-size=${THREAD_SEMI_SPACE_MB}`);
    this.pool = new Piscina({
      filename: path.join(__dirname, "evaluation-thread.cjs"),
      // All threads start at once and stay: a request never waits for a thread (and its module loading) to start.
      minThreads: settings.threads,
      maxThreads: settings.threads,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      maxQueue: settings.maxQueue,
      loadBalancer: readyIdleThread,
      resourceLimits: {
        maxOldGenerationSizeMb: settings.memoryLimitMb,
        maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
      },
    });
    this.threadShare = new ThreadShare(threadsPerActor(settings.threads), settings.maxQueue);
    // piscina announces each thread once it is ready (workerCreate; after the first ones, replacements of threads
    // stopped at a limit), and its end (workerDestroy).
    const ready = new Set<object>();
    let created = 0;
    this.pool.on("workerCreate", (thread: object) => {
      ready.add(threadRecord(thread));
      this.threadShare.setThreads(ready.size, ++created > settings.threads);
    });
    this.pool.on("workerDestroy", (thread: object) => {
      ready.delete(threadRecord(thread));
      this.threadShare.setThreads(ready.size, false);
    });
    this.jobShare = new JobShare(settings.jobs ?? 8);
  }

  /**
   * Evaluates each item (a request: urns and the tests it names, or unset for the ACTIVE tests of each entity's type)
   * against `input`; each item's evaluations, the EvaluationLimitError it was stopped with, or the
   * StoredDefinitionError of a test it needs whose stored definition no longer parses. Other errors are thrown.
   */
  async evaluate<I extends ThreadItem>(
    input: PoolInput,
    items: readonly I[],
    limitText = `${this.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS)`,
  ): Promise<Array<OutcomeOf<I>>> {
    return (await this.evaluateTimed(input, items, limitText)).outcomes;
  }

  /** Like evaluate, also saying how long the evaluation held a thread (ms): the cost charged to its actor. */
  async evaluateTimed<I extends ThreadItem>(
    input: PoolInput,
    items: readonly I[],
    limitText = `${this.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS)`,
  ): Promise<{ outcomes: Array<OutcomeOf<I>>; threadMs: number }> {
    const outcomes = new Array<OutcomeOf<I>>(items.length);
    let threadMs = 0;
    let pending = items.map((_, i) => i);
    while (pending.length > 0) {
      const run = pending;
      const { result, ms } = await this.threadShare.run(
        input.actor ?? "",
        () =>
          this.runTask(
            input,
            run.map((i) => items[i]!),
            limitText,
          ),
        // A task stopped at a limit ends its thread, which piscina replaces.
        (done) => !Array.isArray(done.result),
      );
      threadMs += ms;
      if (Array.isArray(result)) {
        run.forEach((i, k) => {
          const one = result[k]!;
          // JSON text comes only for the items that asked for it (OutcomeOf).
          outcomes[i] = (
            "invalidTest" in one ? new StoredDefinitionError(one.invalidTest, one.message) : one
          ) as OutcomeOf<I>;
        });
        return { outcomes, threadMs };
      }
      outcomes[run[result.item]!] = result.error as OutcomeOf<I>;
      // The others lost their results with the thread: they run again, each with the whole limit.
      pending = run.filter((_, k) => k !== result.item);
    }
    return { outcomes, threadMs };
  }

  /** Destroys the threads: evaluations still running end (their jobs are retried by BullMQ) */
  async close(): Promise<void> {
    await this.pool.destroy();
  }

  private async runTask(
    input: PoolInput,
    items: ThreadItem[],
    limitText: string,
  ): Promise<{ result: ThreadItemResult[] | { item: number; error: EvaluationLimitError }; ms: number }> {
    const limitMs = this.settings.timeLimitMs;
    const whereBuffer = new SharedArrayBuffer(WHERE.size * Int32Array.BYTES_PER_ELEMENT);
    const where = new Int32Array(whereBuffer).fill(-1);
    const entities = input.entities;
    const task: EvaluationTask = {
      at: input.at,
      tests: input.tests,
      ...("json" in entities
        ? { entitiesJson: entities.json }
        : { entities: [...new Set(items.flatMap((i) => i.urns))].map((urn) => entities.get(urn)!) }),
      items,
      where: whereBuffer,
      base: Date.now(),
    };
    const abort = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    // Wakes at most once a limit per request: the time a task waits for a thread, and its earlier requests, do not
    // count against the request it is at.
    const watch = (delayMs: number) => {
      timer = setTimeout(() => {
        if (Atomics.load(where, WHERE.item) < 0) return watch(limitMs);
        const ran = Date.now() - task.base - Atomics.load(where, WHERE.startedAt);
        if (ran < limitMs) return watch(limitMs - ran);
        timedOut = true;
        abort.abort();
      }, delayMs);
    };
    watch(limitMs);
    // The time the task held a thread, from when the thread took it (waiting for a thread is not charged).
    const held = () => {
      const began = Atomics.load(where, WHERE.began);
      return began < 0 ? 0 : Math.max(0, Date.now() - task.base - began);
    };
    try {
      const result = await this.pool.run(task, { signal: abort.signal });
      return { result, ms: held() };
    } catch (error) {
      const outOfMemory = (error as { code?: string } | null)?.code === "ERR_WORKER_OUT_OF_MEMORY";
      if (!timedOut && !outOfMemory) throw error;
      const item = Math.max(0, Atomics.load(where, WHERE.item));
      const entity = Atomics.load(where, WHERE.entity);
      const test = input.tests[Atomics.load(where, WHERE.test)]?.urn;
      const urn = items[item]?.urns[entity];
      const what = `Evaluation${test ? ` of test ${test}` : ""}${urn ? ` on ${urn}` : ""}`;
      const message = timedOut
        ? `${what} stopped after ${limitText}: a test whose evaluation fans out or backtracks on the entity's values ` +
          `is the likely cause; rewrite or deactivate that test.`
        : `${what} stopped: it needed more than ${this.settings.memoryLimitMb} MB of memory ` +
          `(EVALUATION_MEMORY_LIMIT_MB); rewrite or deactivate that test.`;
      return {
        result: { item, error: new EvaluationLimitError(message, timedOut ? "time" : "memory", Math.max(0, entity)) },
        ms: held(),
      };
    } finally {
      clearTimeout(timer);
    }
  }
}
