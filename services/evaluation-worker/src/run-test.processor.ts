import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { inTransaction, type Queryable } from "@mdp/db";
import { cancellationReason } from "@mdp/tasks";
import type { EntityEvaluation } from "@mdp/metadata-tests";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import type { Payload } from "@mdp/queues";
import type { EvaluateDeps } from "./evaluate.processor";
import { percentOf, type EvaluationProgress, type TaskEnd } from "./task-rows";

type RunTestPayload = Extract<Payload<"evaluate">, { kind: "runTest" }>;

/** The task row's progress of a test run: the counts, and where the walk over the entities has got to. */
interface RunProgress extends EvaluationProgress {
  batches: number;
  /** entities that got a new testResults version (pushing results equal to the stored ones writes nothing) */
  pushed: number;
  /** the last urn evaluated, in PostgreSQL's urn order: a retried attempt resumes after it */
  lastUrn: string;
}

export interface RunTestResult {
  evaluated: number;
  passing: number;
  failing: number;
  notApplicable: number;
  pushed: number;
}

/**
 * Evaluates one test against every entity whose type its on.types names (on.conditions decide per entity), in
 * batches of `batchSize` entities in urn order. Each batch's pushed results and the task's progress commit in one
 * transaction, so a worker that dies mid-run leaves exact counts and the retry resumes after the last committed
 * batch, evaluating no entity twice. Between batches it honours cancellation and shutdown, and re-reads the test:
 * an edited test is applied from the next batch on, a deleted one stops the run.
 */
export function createRunTestHandler(deps: EvaluateDeps) {
  return async (payload: RunTestPayload, job: Job, token: string | undefined): Promise<unknown> => {
    const { prisma } = deps.db;
    const task = await prisma.task.findUnique({ where: { id: payload.taskId } });
    if (!task) throw new UnrecoverableError(`Task ${payload.taskId} does not exist`);
    if (task.state !== "waiting" && task.state !== "active") return task.result; // a duplicate delivery
    let progress = progressOf(task.progress);
    const end = async (state: TaskEnd, reason: string): Promise<never> => {
      await deps.tasks.finish(payload.taskId, state, { progress, failedReason: reason });
      throw new UnrecoverableError(reason);
    };
    if (task.cancelRequested) return end("cancelled", cancellationReason(task));

    try {
      let test = await deps.store.test(payload.testUrn);
      if (!test) return await end("failed", `Test ${payload.testUrn} does not exist`);
      if (task.startedAt === null) {
        const total = await deps.store.countEntities(test.onTypes);
        progress = { ...progress, total, percent: total === 0 ? 100 : 0 };
      }
      const startedAt = task.startedAt ?? new Date();
      await prisma.task.update({
        where: { id: payload.taskId },
        data: {
          state: "active",
          startedAt,
          attemptsMade: job.attemptsMade + 1,
          failedReason: null,
          progress: { ...progress },
        },
      });

      for (;;) {
        if (deps.shutdownSignal.aborted) await handBack(deps.db.pool, payload.taskId, job.attemptsMade + 1, job, token);
        const { cancelRequested } = await prisma.task.findUniqueOrThrow({
          where: { id: payload.taskId },
          select: { cancelRequested: true },
        });
        if (cancelRequested) {
          return await end("cancelled", cancellationReason({ ...task, startedAt, progress: { ...progress } }));
        }
        test = await deps.store.test(payload.testUrn);
        if (!test) {
          return await end(
            "failed",
            `Test ${payload.testUrn} was deleted while it ran; ${progress.evaluated} entities were evaluated`,
          );
        }
        const entities = await deps.store.nextEntities(test.onTypes, progress.lastUrn, payload.batchSize);
        if (entities.length === 0) break;
        // The batch is one request to the pool: EVALUATION_TIME_LIMIT_MS bounds the batch's evaluation.
        const [outcome] = await deps.pool.evaluate(
          { at: Date.now(), tests: [test], entities: new Map(entities.map((e) => [e.urn, e])) },
          [{ urns: entities.map((e) => e.urn), testUrns: [test.urn] }],
          `${deps.pool.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS) for its batch of ${entities.length} entities`,
        );
        if (outcome instanceof EvaluationLimitError) {
          return await end(
            "failed",
            `${outcome.message} ${progress.evaluated + outcome.entitiesBefore} entities were evaluated before it.`,
          );
        }
        // A stored definition past a limit (written before the limit existed) fails the run at once: no attempt can
        // change it.
        if (outcome instanceof StoredDefinitionError) return await end("failed", outcome.message);
        const evaluations = entities.map((entity, i) => ({ entity, evaluation: outcome![i]! }));
        const evaluated = new Set([payload.testUrn]);
        progress = await inTransaction(deps.db.pool, async (client) => {
          let pushed = 0;
          if (payload.push) {
            const items = evaluations.map(({ entity, evaluation }) => ({
              entityType: entity.entityType,
              evaluation,
              evaluated,
              actorUrn: payload.actorUrn,
            }));
            pushed = await deps.pusher.push(client, items);
          }
          const next = advance(
            progress,
            evaluations.map((e) => e.evaluation),
            pushed,
            entities.at(-1)!.urn,
          );
          await saveProgress(client, payload.taskId, next);
          return next;
        });
        // The dashboard's copy; the task row is the truth, so a Redis hiccup here must not fail the batch.
        await job.updateProgress({ ...progress }).catch(() => undefined);
      }
    } catch (error) {
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await deps.tasks.recordAttemptFailure(job, payload.taskId, error);
      throw error;
    }
    progress = { ...progress, total: Math.max(progress.total, progress.evaluated), percent: 100 };
    const result: RunTestResult = {
      evaluated: progress.evaluated,
      passing: progress.passing,
      failing: progress.failing,
      notApplicable: progress.notApplicable,
      pushed: progress.pushed,
    };
    await deps.tasks.finish(payload.taskId, "completed", { progress, result });
    return result;
  };
}

function advance(
  progress: RunProgress,
  evaluations: readonly EntityEvaluation[],
  pushed: number,
  lastUrn: string,
): RunProgress {
  const evaluated = progress.evaluated + evaluations.length;
  // Entities ingested during the run make total grow rather than percent pass 100.
  const total = Math.max(progress.total, evaluated);
  return {
    evaluated,
    total,
    passing: progress.passing + evaluations.filter((e) => e.passing.length > 0).length,
    failing: progress.failing + evaluations.filter((e) => e.failing.length > 0).length,
    notApplicable: progress.notApplicable + evaluations.filter((e) => e.notApplicable.length > 0).length,
    percent: percentOf(evaluated, total),
    batches: progress.batches + 1,
    pushed: progress.pushed + pushed,
    lastUrn,
  };
}

function progressOf(value: unknown): RunProgress {
  const p = (value ?? {}) as Partial<RunProgress>;
  return {
    evaluated: Number(p.evaluated ?? 0),
    total: Number(p.total ?? 0),
    passing: Number(p.passing ?? 0),
    failing: Number(p.failing ?? 0),
    notApplicable: Number(p.notApplicable ?? 0),
    percent: Number(p.percent ?? 0),
    batches: Number(p.batches ?? 0),
    pushed: Number(p.pushed ?? 0),
    lastUrn: typeof p.lastUrn === "string" ? p.lastUrn : "",
  };
}

async function saveProgress(db: Queryable, taskId: string, progress: RunProgress): Promise<void> {
  await db.query("UPDATE task SET progress = $2::jsonb WHERE id = $1", [taskId, JSON.stringify(progress)]);
}

/** Puts the job back in the queue at once: another worker (or this one, restarted) resumes after the last batch. */
async function handBack(
  db: Queryable,
  taskId: string,
  attempt: number,
  job: Job,
  token: string | undefined,
): Promise<never> {
  // Its task waits again meanwhile, so getTaskStatus does not show it running and cancelTask can take it off the queue;
  // only while it is this attempt's: a worker that took the job over after this one's lock lapsed runs a later one.
  await db.query("UPDATE task SET state = 'waiting' WHERE id = $1 AND state = 'active' AND attempts_made = $2", [
    taskId,
    attempt,
  ]);
  await job.moveToDelayed(Date.now(), token);
  throw new DelayedError();
}
