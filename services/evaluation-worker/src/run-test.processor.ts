import { z } from "zod";
import { runTestPayload } from "@mdp/queues";
import { defineTask, percentOf, TaskRunner, type TaskRow } from "@mdp/tasks";
import type { EntityBatch } from "@mdp/db";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import type { EvaluateDeps } from "./evaluation-deps";
import { countEvaluations, countTally } from "./evaluation-metrics";
import { entityCounts, type EntityCounts } from "./batch-push";

const count = z.number().int().nonnegative().default(0);
/** The task row's progress of a test run: the counts, and where the walk over the entities has got to. */
const runProgress = z.object({
  evaluated: count,
  total: count,
  passing: count,
  failing: count,
  /** evaluated, but the test's on clause did not select the entity */
  notApplicable: count,
  percent: z.number().default(0),
  batches: count,
  /** entities that got a new testResults version (pushing results equal to the stored ones writes nothing) */
  pushed: count,
  /** the last urn evaluated, in PostgreSQL's urn order: a retried attempt resumes after it */
  lastUrn: z.string().default(""),
});
type RunProgress = z.output<typeof runProgress>;

export interface RunTestResult {
  evaluated: number;
  passing: number;
  failing: number;
  notApplicable: number;
  pushed: number;
}

/** A batch read ahead (push false): the walk's position it follows, the types it read, the read itself. */
interface ReadAhead {
  afterUrn: string;
  types: string;
  batch: Promise<EntityBatch | null>;
}

/**
 * Each attempt's read-ahead, by its task context (one per attempt: it goes with the attempt however it ends, a
 * cancellation, a hand-back or an error included).
 */
const readAheads = new WeakMap<object, ReadAhead>();

/**
 * What the reconciler needs of the kind: a vanished job is queued again from the row, acting for whom the job did —
 * its creator, through the token it created the task with (a push's actions act within that token's bounds: without
 * it the run would act with all its creator's grants).
 */
export const runTestKind = {
  kind: "runTest",
  input: runTestPayload,
  requeuePayload: (task: TaskRow) => ({
    ...(task.request as object),
    taskId: task.id,
    actorUrn: task.createdBy,
    ...(task.createdVia !== null && { actorTokenId: task.createdVia }),
  }),
} as const;

/**
 * Evaluates one test against every entity whose type its on.types names (on.conditions decide per entity), in
 * batches of `batchSize` entities in urn order. Each batch's pushed results and the task's progress commit in one
 * transaction (the runner's step), so a worker that dies mid-run leaves exact counts and the retry resumes after the
 * last committed batch, evaluating no entity twice. Before each batch the runner honours cancellation and shutdown,
 * and the batch re-reads the test: an edited test is applied from the next batch on, a deleted one stops the run.
 */
export function runTestTask(deps: EvaluateDeps) {
  return defineTask({
    ...runTestKind,
    progress: runProgress,
    percent: (p) => p.percent,
    async plan({ input, progress, fail }, _client, round) {
      if (round > 0) return { steps: [] }; // the one batch step ran until no entity was left
      const test = await deps.store.test(input.testUrn);
      if (!test) return fail(`Test ${input.testUrn} does not exist`);
      // The first batch fixes total (entities ingested during the run make it grow); a resumed run keeps its count.
      if (progress.batches > 0) return { steps: ["batch"] };
      const total = await deps.store.countEntities(test.onTypes, input.push ? undefined : replicaOf(input));
      return { steps: ["batch"], progress: (stored) => ({ ...stored, total, percent: total === 0 ? 100 : 0 }) };
    },
    async step(ctx, _step: "batch", client) {
      const { input, progress, fail } = ctx;
      const test = await deps.store.test(input.testUrn);
      if (!test)
        return fail(`Test ${input.testUrn} was deleted while it ran; ${progress.evaluated} entities were evaluated`);
      // Lock before read: the batch's testResults locks are taken before its entities are read, and held until its
      // push commits, so an evaluate push of one of these entities (fresher than what this batch read) either
      // commits before the read, or waits and merges onto this batch's write; it is never overwritten by it.
      // One statement without push; the entities travel to the thread as one JSON text (EntityBatch of @mdp/db).
      const types = JSON.stringify(test.onTypes);
      const ahead = readAheads.get(ctx);
      readAheads.delete(ctx);
      const batch =
        (ahead && ahead.afterUrn === progress.lastUrn && ahead.types === types ? await ahead.batch : null) ??
        (await deps.store.nextBatch(test.onTypes, progress.lastUrn, input.batchSize, {
          lockFor: input.push ? deps.pusher : undefined,
          testUrns: [test.urn],
          client,
          // Without push nothing this run reads is followed by a write of it: a read replica's copy serves.
          replica: input.push ? undefined : replicaOf(input),
        }));
      if (batch.urns.length === 0) return { again: false };
      if (!input.push && batch.urns.length === input.batchSize) {
        // Without push nothing is locked or written by the run, so the next batch is read (on a connection of its own)
        // while this one is evaluated: the read and the evaluation overlap instead of taking turns. A batch read ahead
        // is used only where the walk goes on from (same position, same types), and it is as fresh as a read made at
        // the start of this batch's evaluation; a failed read is done again by the next step.
        const afterUrn = batch.urns.at(-1)!;
        readAheads.set(ctx, {
          afterUrn,
          types,
          batch: deps.store
            .nextBatch(test.onTypes, afterUrn, input.batchSize, { replica: replicaOf(input) })
            .catch(() => null),
        });
      }
      // The batch is one request to the pool: EVALUATION_TIME_LIMIT_MS bounds the batch's evaluation. With push, the
      // thread also merges the results onto the stored ones, read with the batch under its locks (batch-push.ts).
      const at = Date.now();
      const [outcome] = await deps.pool.evaluate(
        { at, tests: [test], entities: { json: batch.json } },
        [
          {
            urns: batch.urns,
            testUrns: [test.urn],
            // Values only to store: a run answers counts, nobody reads its failed rules but from testResults.
            withValues: input.push,
            ...(input.push && { merge: { onTypes: mergeOnTypesOf(batch) } }),
          },
        ],
        `${deps.pool.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS) for its batch of ${batch.urns.length} entities`,
      );
      if (outcome instanceof EvaluationLimitError) {
        return fail(
          `${outcome.message} ${progress.evaluated + outcome.entitiesBefore} entities were evaluated before it.`,
        );
      }
      // A stored definition past a limit (written before the limit existed) fails the run at once: no attempt can
      // change it.
      if (outcome instanceof StoredDefinitionError) return fail(outcome.message);
      let counted: BatchCounts;
      if (Array.isArray(outcome)) {
        countEvaluations(outcome);
        counted = { evaluated: outcome.length, ...entityCounts(outcome), pushed: 0 };
      } else {
        const merged = outcome!;
        countTally(merged.tally);
        // The thread answers the evaluations only when the test has actions, which the push runs.
        const evaluated = new Set([test.urn]);
        const actionItems = (merged.evaluations ?? []).map((evaluation, i) => ({
          entityType: batch.entityTypes[i]!,
          evaluation,
          evaluated,
          actorUrn: input.actorUrn,
          ...(input.actorTokenId !== undefined && { actorTokenId: input.actorTokenId }),
        }));
        const versions = new Map(Object.entries(JSON.parse(batch.versions ?? "{}") as Record<string, number>));
        const pushed = await deps.pusher.pushMerged(
          client,
          merged,
          { actorUrn: input.actorUrn, actorTokenId: input.actorTokenId },
          versions,
          at,
          actionItems,
        );
        // What this batch changed since the test's last run, from the history the push just wrote (test-run-diff.ts).
        await deps.runDiffs?.record(
          client,
          { runId: input.taskId, testUrn: input.testUrn },
          { evaluatedAt: at, decided: merged.decided },
        );
        counted = { evaluated: batch.urns.length, ...merged.entities, pushed };
      }
      const lastUrn = batch.urns.at(-1)!;
      return { progress: (stored) => advance(stored, counted, lastUrn), again: true };
    },
    finish: (p) => ({ ...p, total: Math.max(p.total, p.evaluated), percent: 100 }),
    result: (p): RunTestResult => ({
      evaluated: p.evaluated,
      passing: p.passing,
      failing: p.failing,
      notApplicable: p.notApplicable,
      pushed: p.pushed,
    }),
  });
}

/** The runner of the evaluate queue's durable task kind (an evaluate job, answered at once, is not a task). */
export function runTestRunner(deps: EvaluateDeps): TaskRunner {
  return new TaskRunner(deps, "evaluate", [runTestTask(deps)]);
}

/** What one batch adds to a run's progress. */
interface BatchCounts extends EntityCounts {
  evaluated: number;
  pushed: number;
}

function advance(progress: RunProgress, batch: BatchCounts, lastUrn: string): RunProgress {
  const evaluated = progress.evaluated + batch.evaluated;
  // Entities ingested during the run make total grow rather than percent pass 100.
  const total = Math.max(progress.total, evaluated);
  return {
    evaluated,
    total,
    passing: progress.passing + batch.passing,
    failing: progress.failing + batch.failing,
    notApplicable: progress.notApplicable + batch.notApplicable,
    percent: percentOf(evaluated, total),
    batches: progress.batches + 1,
    pushed: progress.pushed + batch.pushed,
    lastUrn,
  };
}

/**
 * What a push's merge needs beside the batch: the on.types its read under the locks brought. Missing, every stored
 * result of another test would be taken for one whose test no longer exists and dropped: refused instead.
 */
function mergeOnTypesOf(batch: EntityBatch): string {
  if (batch.onTypes === undefined)
    throw new Error("runTest's batch to push was read without the on.types of its tests");
  return batch.onTypes;
}

/** Where a run without push may read: a replica that has replayed its creator's recent write (readAfter). */
function replicaOf(input: { readAfter?: string | undefined }): { after?: string } {
  return input.readAfter === undefined ? {} : { after: input.readAfter };
}
