import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { inTransaction } from "@mdp/db";
import { cancellationReason, isLastAttempt, percentOf, type EvaluationProgress } from "@mdp/tasks";
import type { EntityEvaluation } from "@mdp/metadata-tests";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import { JobCancelledError, type Payload } from "@mdp/queues";
import type { EvaluateDeps } from "./evaluation-deps";
import { countEvaluations } from "./evaluation-metrics";

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
  const { tasks } = deps;
  return async (payload: RunTestPayload, job: Job, token: string | undefined): Promise<unknown> => {
    const claim = await tasks.claimJob(payload.taskId, job, token);
    if (claim.outcome === "finished") return claim.result; // a duplicate delivery
    const { lease, task } = claim;
    let progress = progressOf(task.progress);
    const startedAt = task.startedAt ?? new Date();
    const end = async (state: "failed" | "cancelled", reason: string): Promise<never> => {
      await (state === "failed" ? tasks.fail(lease, reason, progress) : tasks.cancel(lease, reason, progress));
      throw state === "cancelled" ? new JobCancelledError(reason) : new UnrecoverableError(reason);
    };

    try {
      let test = await deps.store.test(payload.testUrn);
      if (!test) return await end("failed", `Test ${payload.testUrn} does not exist`);
      // The first batch fixes total (entities ingested during the run make it grow); a resumed run keeps its count.
      if (progress.batches === 0) {
        const total = await deps.store.countEntities(test.onTypes);
        progress = await tasks.progress(lease, () => ({ ...progress, total, percent: total === 0 ? 100 : 0 }));
      }

      for (;;) {
        if (deps.shutdownSignal.aborted) await tasks.handBack(lease, job, token);
        const { cancelRequested } = await tasks.checkpoint(lease);
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
        const current = test;
        // Lock before read: the batch's testResults locks are taken before its entities are read, and held until its
        // push commits, so an evaluate push of one of these entities (fresher than what this batch read) either
        // commits before the read, or waits and merges onto this batch's write; it is never overwritten by it.
        const next = await inTransaction(deps.db.pool, async (client): Promise<BatchEnd | null> => {
          const entities = await deps.store.nextEntities(current.onTypes, progress.lastUrn, payload.batchSize, {
            lockFor: payload.push ? deps.pusher : undefined,
            client,
          });
          if (entities.length === 0) return null;
          // The batch is one request to the pool: EVALUATION_TIME_LIMIT_MS bounds the batch's evaluation.
          const [outcome] = await deps.pool.evaluate(
            { at: Date.now(), tests: [current], entities: new Map(entities.map((e) => [e.urn, e])) },
            // Values only to store: a run answers counts, nobody reads its failed rules but from testResults.
            [{ urns: entities.map((e) => e.urn), testUrns: [current.urn], withValues: payload.push }],
            `${deps.pool.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS) for its batch of ${entities.length} entities`,
          );
          if (outcome instanceof EvaluationLimitError) {
            return {
              failed: `${outcome.message} ${progress.evaluated + outcome.entitiesBefore} entities were evaluated before it.`,
            };
          }
          // A stored definition past a limit (written before the limit existed) fails the run at once: no attempt can
          // change it.
          if (outcome instanceof StoredDefinitionError) return { failed: outcome.message };
          const evaluations = entities.map((entity, i) => ({ entity, evaluation: outcome![i]! }));
          countEvaluations(evaluations.map((e) => e.evaluation));
          const evaluated = new Set([payload.testUrn]);
          let pushed = 0;
          if (payload.push) {
            const items = evaluations.map(({ entity, evaluation }) => ({
              entityType: entity.entityType,
              evaluation,
              evaluated,
              actorUrn: payload.actorUrn,
              ...(payload.actorTokenId !== undefined && { actorTokenId: payload.actorTokenId }),
            }));
            pushed = await deps.pusher.push(client, items);
          }
          const lastUrn = entities.at(-1)!.urn;
          const saved = await tasks.progress(
            lease,
            (stored) =>
              advance(
                progressOf(stored),
                evaluations.map((e) => e.evaluation),
                pushed,
                lastUrn,
              ),
            client,
          );
          return { saved };
        });
        if (next === null) break;
        if ("failed" in next) return await end("failed", next.failed);
        progress = next.saved;
        // The dashboard's copy; the task row is the truth, so a Redis hiccup here must not fail the batch.
        await job.updateProgress({ ...progress }).catch(() => undefined);
      }
      progress = { ...progress, total: Math.max(progress.total, progress.evaluated), percent: 100 };
      const result: RunTestResult = {
        evaluated: progress.evaluated,
        passing: progress.passing,
        failing: progress.failing,
        notApplicable: progress.notApplicable,
        pushed: progress.pushed,
      };
      await tasks.complete(lease, progress, result);
      return result;
    } catch (error) {
      if (error instanceof UnrecoverableError || error instanceof DelayedError) throw error;
      await tasks.failAttempt(lease, error, isLastAttempt(job));
      throw error;
    } finally {
      tasks.release(lease); // however the attempt ended, this process renews its lease no more
    }
  };
}

type BatchEnd = { failed: string } | { saved: RunProgress };

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
