import { performance } from "node:perf_hooks";
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type pg from "pg";
import type { Logger } from "@mdp/core";
import { inTransaction, isStatementTimeout, setStatementTimeout, type Database } from "@mdp/db";
import { JobCancelledError, type Producer, type QueueKey } from "@mdp/queues";
import { cancellationReason } from "../cancellation";
import { isLastAttempt, type TaskLifecycle, type TaskRow } from "../lifecycle";
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
    const ctx: TaskContext<I, P> = {
      input,
      task,
      startedAt,
      logger,
      get progress() {
        return progress;
      },
      fail(reason: string): never {
        throw new TaskFailure(reason);
      },
    };
    const deadline = definition.deadline?.(input, startedAt);
    const dashboard = dashboardProgress(job, this.deps.progressIntervalMs ?? PROGRESS_INTERVAL_MS);
    const report = (final = false) => dashboard.report({ progress: definition.percent(progress), ...progress }, final);

    /** In a transaction whose statements PostgreSQL cancels when the deadline passes, with the progress it reports. */
    const commit = async (work: (client: pg.PoolClient) => Promise<((stored: P) => P) | undefined>): Promise<void> => {
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
    const checkpoint = async (): Promise<void> => {
      if (shutdownSignal.aborted) await tasks.handBack(lease, job, jobToken);
      if (deadline !== undefined && Date.now() >= deadline) throw new TaskFailure(timedOut());
      const { cancelRequested } = await tasks.checkpoint(lease);
      if (cancelRequested) {
        const reason = cancellationReason({ ...task, startedAt, progress: { ...progress } });
        await tasks.cancel(lease, reason, progress);
        await report(true); // the dashboard's bar where the task stopped, not at its last throttled report
        throw new JobCancelledError(reason);
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
    jobExists: async (taskId) => Boolean(await producer.queue.getJob(taskId)),
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
