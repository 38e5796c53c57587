import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type pg from "pg";
import { unavailableDependency, type Logger } from "@mdp/core";
import { inTransaction, isStatementTimeout, setStatementTimeout, type Database } from "@mdp/db";
import { isLastAttempt, JobCancelledError, type Producer, type QueueKey } from "@mdp/queues";
import { cancellationReason } from "../cancellation";
import type { TaskLifecycle, TaskRow } from "../lifecycle";
import type { ReconciledKind } from "../reconciler";
import { TASK_KINDS, type TaskContext, type TaskDefinition, type TaskKindName } from "./task-definition";

/** Batches can take milliseconds: the job's progress (one Redis round trip) is reported at most this often. */
export const PROGRESS_INTERVAL_MS = 1000;

export interface TaskRunnerDeps {
  db: Database;
  /** the lifecycle whose leases the process renews (keepLeases) */
  tasks: TaskLifecycle;
  logger: Logger;
  /** aborted when the process is asked to stop: a running task hands its job back at its next checkpoint */
  shutdownSignal: AbortSignal;
  /** the least time between two progress reports to the job (Bull Board's bar); default PROGRESS_INTERVAL_MS */
  progressIntervalMs?: number;
}

/** A job handler of one task kind, as createWorker calls it. */
export type TaskHandler = (payload: unknown, job: Job, token: string | undefined) => Promise<unknown>;

/**
 * How long a paced task waits at a time before it reads its row again: a rethrottle, a cancel or a shutdown takes
 * effect within this, however slow the pace. Its lease is renewed meanwhile by the process (keepLeases), as always.
 */
export const PACE_RECHECK_MS = 1000;

/**
 * How long one step (or plan, or checkpoint) waits out PostgreSQL or Redis being away before its attempt fails after
 * all (and how long, at most, between two tries while it waits): a restart or a failover takes seconds; an outage past
 * this spends the attempt, as any failure does. A task's own deadline, when sooner, ends the wait first.
 */
export const OUTAGE_WAIT = { totalMs: 120_000, maxIntervalMs: 5_000 } as const;

/** ctx.fail's signal to the runner: end the task as failed with this reason. */
class TaskFailure extends Error {}

/**
 * Runs the task kinds of one queue: for each job, claims its task under a lease, plans and runs its steps with a
 * checkpoint before each (cancellation, shutdown, deadline), commits each step with its progress under the lease,
 * and ends the task (completed, failed, cancelled, handed back, or waiting for BullMQ's retry). Built at a worker's
 * start: a task kind of the queue without a definition refuses to start.
 */
export class TaskRunner {
  private readonly byKind = new Map<TaskKindName, TaskDefinition>();

  constructor(
    private readonly deps: TaskRunnerDeps,
    readonly queue: QueueKey,
    definitions: readonly TaskDefinition[],
  ) {
    for (const definition of definitions) {
      if (TASK_KINDS[definition.kind].queue !== queue) {
        throw new Error(
          `Task kind ${definition.kind} runs on queue ${TASK_KINDS[definition.kind].queue}, not ${queue}`,
        );
      }
      this.byKind.set(definition.kind, definition);
    }
    const missing = kindsOf(queue).filter((kind) => !this.byKind.has(kind));
    if (missing.length > 0) throw new Error(`No handler for task kind(s) ${missing.join(", ")} of queue ${queue}`);
  }

  /** The job handler of one kind. */
  handler(kind: TaskKindName): TaskHandler {
    const definition = this.byKind.get(kind);
    if (!definition) throw new Error(`No handler for task kind ${kind}`);
    return (payload, job, token) => this.run(definition, payload, job, token);
  }

  /** The reconciler's view of this queue's task kinds (reconciledKind). */
  reconciled(producer: Producer<QueueKey>): ReconciledKind[] {
    return [...this.byKind.values()].map((definition) => reconciledKind(definition, producer));
  }

  /** A task whose job BullMQ failed without running it (it stalled too often): ends failed, progress as committed. */
  givenUp(taskId: string, reason: string): Promise<void> {
    return this.deps.tasks.giveUp(taskId, reason);
  }

  private async run<I, P extends object, S, R>(
    definition: TaskDefinition<I, P, S, R>,
    payload: unknown,
    job: Job,
    jobToken: string | undefined,
  ): Promise<unknown> {
    const { tasks, db, logger, shutdownSignal } = this.deps;
    const parsedInput = definition.input.safeParse(payload);
    if (!parsedInput.success)
      throw new UnrecoverableError(`Invalid ${definition.kind} input: ${parsedInput.error.message}`);
    const input = parsedInput.data;
    const taskId = (input as { taskId: string }).taskId;
    const claim = await tasks.claimJob(taskId, job, jobToken);
    if (claim.outcome === "finished") return claim.result; // a duplicate delivery
    const { lease, task } = claim;
    const startedAt = task.startedAt ?? new Date();
    const parse = (stored: unknown): P => definition.progress.parse(stored ?? {});
    let progress = parse(task.progress);
    const deadline = definition.deadline?.(input, startedAt);
    const ctx: TaskContext<I, P> = {
      input,
      task,
      startedAt,
      deadline,
      logger,
      get progress() {
        return progress;
      },
      fail(reason: string): never {
        throw new TaskFailure(reason);
      },
    };
    const dashboard = dashboardProgress(job, this.deps.progressIntervalMs ?? PROGRESS_INTERVAL_MS);
    const report = (final = false) => dashboard.report({ progress: definition.percent(progress), ...progress }, final);

    /**
     * `work` again, while it fails because PostgreSQL or Redis is away (a restart, a failover, a reset connection):
     * what the outage interrupted was rolled back with its transaction, and the attempt is not spent on the
     * infrastructure. Waits at most OUTAGE_WAIT.totalMs (or until the deadline, the shutdown) before letting it fail.
     */
    const outlastingOutages = async <T>(work: () => Promise<T>): Promise<T> => {
      const giveUpAt = Math.min(Date.now() + OUTAGE_WAIT.totalMs, deadline ?? Number.POSITIVE_INFINITY);
      for (let wait = 250; ; wait = Math.min(wait * 2, OUTAGE_WAIT.maxIntervalMs)) {
        try {
          return await work();
        } catch (error) {
          const away = unavailableDependency(error);
          if (!away || shutdownSignal.aborted || Date.now() + wait >= giveUpAt) throw error;
          logger.warn({ taskId, dependency: away }, `${away} is unavailable: the task's step waits for it`);
          await sleep(wait, undefined, { signal: shutdownSignal }).catch(() => undefined);
        }
      }
    };
    /** In a transaction whose statements PostgreSQL cancels when the deadline passes, with the progress it reports. */
    const commit = (work: (client: pg.PoolClient) => Promise<((stored: P) => P) | undefined>): Promise<void> =>
      outlastingOutages(() => commitOnce(work));
    const commitOnce = async (
      work: (client: pg.PoolClient) => Promise<((stored: P) => P) | undefined>,
    ): Promise<void> => {
      progress = await inTransaction(db.pool, async (client) => {
        if (deadline !== undefined) await setStatementTimeout(client, deadline - Date.now());
        const update = await work(client);
        return update ? tasks.progress(lease, (stored) => update(parse(stored)), client) : progress;
      }).catch((error: unknown) => {
        if (deadline !== undefined && isStatementTimeout(error)) throw new TaskFailure(timedOut());
        throw error;
      });
    };
    const timedOut = () => definition.timedOut?.(input, progress) ?? "Timed out";
    const checkpointOnce = async (): Promise<TaskRow> => {
      if (shutdownSignal.aborted) await tasks.handBack(lease, job, jobToken);
      if (deadline !== undefined && Date.now() >= deadline) throw new TaskFailure(timedOut());
      const { cancelRequested, task: row } = await outlastingOutages(() => tasks.checkpoint(lease));
      if (cancelRequested) {
        const reason = cancellationReason({ ...task, startedAt, progress: { ...progress } });
        await tasks.cancel(lease, reason, progress);
        await report(true); // the dashboard's bar where the task stopped, not at its last throttled report
        throw new JobCancelledError(reason);
      }
      return row;
    };
    /** the last step that did paced work: when it started (performance.now) and how many units it did */
    let paced: { at: number; units: number } | undefined;
    /**
     * Before each step: stop if asked to (cancel, shutdown, deadline); for a paced task, show the pace its row asks for
     * in the progress, and wait (never holding a transaction) until the previous step's units have taken their time
     * at that pace, reading the row again every PACE_RECHECK_MS so that a rethrottle or a cancel takes effect at once.
     */
    const checkpoint = async (): Promise<void> => {
      const pace = definition.pace;
      for (;;) {
        const row = await checkpointOnce();
        if (!pace) return;
        const rate = row.rowsPerSecond;
        if (pace.shown(progress) !== rate) {
          progress = await tasks.progress(lease, (stored) => pace.show(parse(stored), rate));
          await report(true);
        }
        if (rate === null || paced === undefined) return;
        let wait = paced.at + (paced.units * 1000) / rate - performance.now();
        if (deadline !== undefined) wait = Math.min(wait, deadline - Date.now());
        if (wait <= 0) return;
        await sleep(Math.min(wait, PACE_RECHECK_MS), undefined, { signal: shutdownSignal }).catch(() => undefined);
      }
    };

    try {
      for (let round = 0; ; round++) {
        let steps: readonly S[] = [];
        await commit(async (client) => {
          const plan = await definition.plan(ctx, client, round);
          steps = plan.steps;
          return plan.progress;
        });
        if (steps.length === 0) break;
        for (const step of steps) {
          let again = true;
          while (again) {
            await checkpoint();
            const started = performance.now();
            let log: Record<string, unknown> | undefined;
            await commit(async (client) => {
              const outcome = await definition.step(ctx, step, client);
              again = outcome.again ?? false;
              log = outcome.log;
              if (outcome.units) paced = { at: started, units: outcome.units };
              return outcome.progress;
            });
            // How long each transaction held its locks: what operators (and bench/truncate) watch.
            logger.debug({ taskId, ...log, stepMs: performance.now() - started }, `${definition.kind} step`);
            await report();
          }
        }
      }
      progress = definition.finish?.(progress) ?? progress;
      const result = definition.result(progress);
      await tasks.complete(lease, progress, result);
      await report(true);
      return result;
    } catch (error) {
      if (error instanceof TaskFailure) {
        await tasks.fail(lease, error.message, progress);
        await report(true);
        throw new UnrecoverableError(error.message);
      }
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await tasks.failAttempt(lease, error, isLastAttempt(job));
      throw error;
    } finally {
      tasks.release(lease); // however the attempt ended, this process renews its lease no more
    }
  }
}

/**
 * The reconciler's view of one task kind: a waiting task whose job vanished from Redis (a restart without persistence)
 * is queued again under its own id, from its row; one whose job failed for good ends failed with BullMQ's reason.
 */
export function reconciledKind(
  definition: Pick<TaskDefinition, "kind" | "input" | "requeuePayload">,
  producer: Producer<QueueKey>,
): ReconciledKind {
  const declared: { type: TaskRow["type"]; requestKind?: string } = TASK_KINDS[definition.kind];
  return {
    type: declared.type,
    ...(declared.requestKind !== undefined && { kind: declared.requestKind }),
    jobExists: async (taskId) => Boolean(await producer.getJob(taskId)),
    failedReason: (taskId) => producer.failedReason(taskId),
    requeue: async (task) => {
      const payload = definition.input.safeParse(definition.requeuePayload(task));
      if (!payload.success) return; // not a request this version can run; left for an operator to see
      await producer.enqueue(task.id, payload.data as never);
    },
  };
}

function kindsOf(queue: QueueKey): TaskKindName[] {
  return (Object.keys(TASK_KINDS) as TaskKindName[]).filter((kind) => TASK_KINDS[kind].queue === queue);
}

/**
 * The job's copy of the progress, which Bull Board draws as a bar: it reads a number, or an object's `progress`
 * number (0–100), so the percent goes there and the counts beside it. Throttled to one report per `intervalMs` (the
 * first step and the end always report); the task row stays the truth, so a Redis hiccup here never fails a step.
 */
function dashboardProgress(job: Job, intervalMs: number) {
  let last = Number.NEGATIVE_INFINITY;
  return {
    async report(progress: object, final = false): Promise<void> {
      const now = performance.now();
      if (!final && now - last < intervalMs) return;
      last = now;
      await job.updateProgress(progress).catch(() => undefined);
    },
  };
}
