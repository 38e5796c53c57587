import type { Logger } from "@mdp/core";
import type { QueueKey } from "@mdp/queues";
import type pg from "pg";
import type { z } from "zod";
import type { TaskRow, TaskType } from "../lifecycle";

/**
 * What one task type is, declared once: its input and progress schemas, how it plans its work and runs one step of it,
 * and what it answers. The runner (task-runner.ts) does everything else: claim, lease, checkpoints (cancellation,
 * shutdown, deadline), progress writes fenced by the lease, retries and the final transition. Models: documenso's
 * job definitions (`io.runTask(key, fn)`) and trigger.dev's run engine.
 *
 * A task is a sequence of rounds: `plan` reads what is left (from the committed progress and the data) and names the
 * round's steps; each step runs in one transaction that commits together with the progress it reports, so a retry
 * resumes after the last committed step and plans again from there. A plan with no steps completes the task.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a runner holds definitions of several types; each gets only its own values
export interface TaskDefinition<I = any, P extends object = any, S = any, R = any> {
  /** its row in TASK_KINDS (below): which declared task kind this is */
  kind: TaskKindName;
  /** the payload as the job carries it (checked again here: a job can outlive the code that queued it) */
  input: z.ZodType<I>;
  /** the stored progress, with a default for every field (a row written before a field existed still parses) */
  progress: z.ZodType<P>;
  /** what Bull Board's bar draws, 0–100 */
  percent(progress: P): number;
  /** when the task must end by (epoch ms), counted from its first start; undefined: no deadline */
  deadline?(input: I, startedAt: Date): number | undefined;
  /** the failedReason of a task whose deadline passed */
  timedOut?(input: I, progress: P): string;
  /**
   * The next round: its steps, and an update of the progress committed with the plan (`round` counts this attempt's
   * plans from 0). Runs in a transaction under the deadline; `ctx.fail` ends the task.
   */
  plan(ctx: TaskContext<I, P>, client: pg.PoolClient, round: number): Promise<Plan<P, S>>;
  /** One step, in a transaction that commits with the progress update it returns; `again`: run the same step again. */
  step(ctx: TaskContext<I, P>, step: S, client: pg.PoolClient): Promise<StepOutcome<P>>;
  /**
   * A task that can be paced (its row's rowsPerSecond, set at creation or by rethrottleTask): how its progress shows
   * the pace being kept. The runner waits at its checkpoints, before a step, until the previous step's `units` at that
   * pace have taken their time; undefined: the task is never paced.
   */
  pace?: {
    shown(progress: P): number | null;
    show(progress: P, unitsPerSecond: number | null): P;
  };
  /** the progress as the completed task keeps it (default: as the last step left it) */
  finish?(progress: P): P;
  /** the task's result (getTaskStatus's `result`) */
  result(progress: P): R;
  /** the job payload of a waiting task whose job vanished from Redis, from its row; undefined: it cannot run again */
  requeuePayload(task: TaskRow): unknown;
}

export interface Plan<P, S> {
  steps: readonly S[];
  progress?: (stored: P) => P;
}

export interface StepOutcome<P> {
  /** the step's effect on the stored progress (read under the row's lock, so two attempts never lose a count) */
  progress?: (stored: P) => P;
  again?: boolean;
  /** the work the step did that a pace counts (a truncation's rows deleted in a batch); none: it adds no wait */
  units?: number;
  /** fields for the step's debug log line */
  log?: Record<string, unknown>;
}

export interface TaskContext<I, P> {
  readonly input: I;
  /** the row as the claim found it */
  readonly task: TaskRow;
  readonly startedAt: Date;
  /** when the task must end by (epoch ms; the definition's deadline), undefined: no deadline */
  readonly deadline: number | undefined;
  /** the progress as the last committed step (or plan) left it */
  readonly progress: P;
  readonly logger: Logger;
  /** Ends the task as failed with this reason: nothing a retry could change (a deleted test, a limit). */
  fail(reason: string): never;
}

/** Every task kind the system runs: its row's type, the request kind that tells kinds of one type apart, its queue. */
export const TASK_KINDS = {
  truncate: { type: "TRUNCATE_TIMESERIES", queue: "truncate" },
  runTest: { type: "EVALUATE_TESTS", requestKind: "runTest", queue: "evaluate" },
} as const satisfies Record<string, { type: TaskType; queue: QueueKey; requestKind?: string }>;

export type TaskKindName = keyof typeof TASK_KINDS;

/** Declares a task type (the identity function, for inference). */
export function defineTask<I, P extends object, S, R>(
  definition: TaskDefinition<I, P, S, R>,
): TaskDefinition<I, P, S, R> {
  return definition;
}
