import type { Job } from "bullmq";
import { perTurn } from "@mdp/core";
import { inTransaction } from "@mdp/db";
import { actionsFromJson, RESULT_LIMITS } from "@mdp/metadata-tests";
import {
  toItemReply,
  type EvaluateJobReply,
  type EvaluateJobResult,
  type EvaluationItem,
  type EvaluationItemReply,
  type Payload,
} from "@mdp/queues";
import type { EvaluationInput } from "./evaluation.store";
import type { EvaluateDeps } from "./evaluation-deps";
import { countRequest } from "./evaluation-metrics";
import { cancelledOutcome, evaluateItems, type ItemOutcome } from "./evaluate-items";
import type { PushItem } from "./results.pusher";
import type { Tally } from "./evaluation-thread";
import type { UnsavedTestActions } from "./test-actions";
import type { EvaluationEnding, EvaluationProgress, EvaluationRecord, FailedEvaluationAttempt } from "@mdp/tasks";

export type EvaluatePayload = Extract<Payload<"evaluate">, { kind: "evaluate" }>;

/**
 * Evaluates the job's items (each one evaluate or batchEvaluate request), pushes their results when asked, and sends
 * each item's outcome to the waiting gateway (replyTo) as soon as that item is done, then records the task rows its
 * callers can ask about. Each actor's items are one task in the evaluation pool (see evaluateItems), so a slow item
 * (stopped only at EVALUATION_TIME_LIMIT_MS) holds one thread and its own actor's answers, never another actor's.
 * Items done in the same turn of the event loop share one claim, one push transaction and one reply, so a job of
 * quick items still costs about one of each. Pushed results are committed before their reply, so a caller can read
 * them at once. Whatever the number of items, the job makes one read (entities, tests and cancellations, afresh from
 * PostgreSQL). An unknown entity or test is a refusal (the gateway's 404), not a failure: retrying cannot change it;
 * so is a stored definition that breaks a definition limit (400 naming it).
 *
 * A caller learns its task id only from a 504, so a row is written only where one can have been handed out: for an
 * item answered as late as its gateway waits (less a margin for clocks, see mayHaveTimedOut), whose reply reached no
 * gateway, or that has no replyTo; and for tasks whose row exists already (a 504 before the job started, or a push's
 * claim). Answered evaluations leave no row: recording them cost a fifth of an evaluation's capacity, for rows no
 * caller could look up.
 */
export async function evaluate(
  deps: EvaluateDeps,
  payload: EvaluatePayload,
  job: Job,
): Promise<EvaluateJobResult | { tasks: Record<string, unknown> }> {
  const startedAt = new Date();
  /** items whose answer has been sent */
  const answered = new Set<string>();
  /**
   * items whose caller may have been given the task id (answered late) or may still be waiting (their reply reached no
   * gateway), with the answer sent: their rows keep it, for a gateway that answers from it (storedAnswers)
   */
  const maybeTimedOut = new Map<string, EvaluationItemReply>();
  let unsent = payload.items.length;
  try {
    const unsavedUrns = new Set(payload.items.flatMap((i) => (i.unsavedTest ? [i.unsavedTest.urn] : [])));
    const input = await deps.store.loadForEvaluation({
      urns: [...new Set(payload.items.flatMap((i) => i.urns))],
      namedTests: [...new Set(payload.items.flatMap((i) => i.testUrns ?? []))].filter((u) => !unsavedUrns.has(u)),
      activeTests: payload.items.some((i) => !i.testUrns),
      taskIds: payload.items.map((i) => i.taskId),
      // Results pushed or actions applied are written from what is read: that read stays on the primary.
      writes: payload.items.some((i) => i.push || appliesActions(i)),
      readAfter: payload.items.map((i) => i.readAfter),
    });
    addUnsavedTests(input, payload.items);
    const evaluatedAt = Date.now();
    const cancelled = new Set(input.cancelled);
    const withRow = new Set(input.started);
    const finish = perTurn(async (done: ItemOutcome[]): Promise<ItemOutcome[]> => {
      let ready = done;
      const pushing = done.filter((o) => (o.item.push || appliesActions(o.item)) && !("refused" in o.result));
      if (pushing.length > 0) {
        const claimed = pushing.map((o) => recordOf(job, startedAt, o.item, progressOf(NONE, o.item.urns.length)));
        for (const row of claimed) withRow.add(row.taskId);
        const stopped = await inTransaction(deps.db.pool, (client) =>
          deps.tasks.evaluations.claimForPush(client, claimed),
        );
        const going = pushing.filter((o) => !stopped.has(o.item.taskId));
        const pushItems = going.filter((o) => o.item.push).flatMap((o) => pushItemsOf(o, input));
        if (pushItems.length > 0) await inTransaction(deps.db.pool, (client) => deps.pusher.push(client, pushItems));
        // runTestDefinition's DEFAULT mode: the unsaved definition's actions, each request in its own transaction.
        for (const o of going.filter((o) => appliesActions(o.item))) {
          await inTransaction(deps.db.pool, (client) =>
            deps.pusher.applyUnsavedActions(client, pushItemsOf(o, input), unsavedActionsOf(o.item)),
          );
        }
        for (const taskId of stopped) cancelled.add(taskId);
        ready = done.map((o) => (stopped.has(o.item.taskId) ? cancelledOutcome(o.item) : o));
      }
      for (const o of ready) countRequest("refused" in o.result, o.tally);
      if (payload.replyTo) {
        unsent -= ready.length;
        // Each message at most about one answer's worth (RESULT_LIMITS.answerBytes): items answered in one turn
        // together could otherwise make one reply of several times that. All are published before any is awaited, so
        // they reach the connection in order, ahead of a later turn's (which may be the job's last reply).
        const chunks = replyChunks(ready);
        const itemReplies = new Map<string, EvaluationItemReply>();
        const sent = chunks.map((chunk, c) => {
          const reply: EvaluateJobReply = {
            items: Object.fromEntries(
              chunk.map((o) => {
                const itemReply: EvaluationItemReply = {
                  ...(o.resultsJson ? { resultsJson: o.resultsJson } : toItemReply(o.result)),
                  evaluationMs: o.threadMs ?? 0,
                };
                itemReplies.set(o.item.taskId, itemReply);
                return [o.item.taskId, itemReply];
              }),
            ),
            ...(unsent > 0 || c < chunks.length - 1 ? { partial: true as const } : {}),
          };
          return replyTo(deps, payload, job, { returnvalue: reply });
        });
        const delivered = (await Promise.all(sent)).every(Boolean);
        const late = !delivered || mayHaveTimedOut(payload, job);
        for (const o of ready) {
          answered.add(o.item.taskId);
          if (late) maybeTimedOut.set(o.item.taskId, itemReplies.get(o.item.taskId)!);
        }
      }
      return ready;
    });
    const settled = await Promise.allSettled(
      evaluateItems(deps, payload.items, input, evaluatedAt).map((group) =>
        group.then((outcomes) => Promise.all(outcomes.map(finish))),
      ),
    );
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    const outcomes = settled.flatMap((s) => (s as PromiseFulfilledResult<ItemOutcome[]>).value);
    const recordAll = !payload.replyTo;
    await deps.tasks.evaluations.end(
      outcomes
        .filter(
          (o) =>
            !cancelled.has(o.item.taskId) &&
            (recordAll || maybeTimedOut.has(o.item.taskId) || withRow.has(o.item.taskId)),
        )
        .map((o) => endingOf(job, startedAt, o, maybeTimedOut.get(o.item.taskId))),
    );
    // Without replyTo the gateway reads the job's return value. With it, the results went to the gateway and into the
    // task rows; the job keeps a summary for the queue dashboard, so Redis does not store every result twice more (the
    // job, and its completed event).
    if (!payload.replyTo) return { items: Object.fromEntries(outcomes.map((o) => [o.item.taskId, o.result])) };
    return { tasks: Object.fromEntries(outcomes.map((o) => [o.item.taskId, summaryOf(o)])) };
  } catch (error) {
    const attempt = deps.tasks.evaluations.failedAttempt(job, error);
    const unanswered = payload.items.filter((i) => !answered.has(i.taskId));
    if (unanswered.length === 0) {
      // Only the task rows failed to be written: the callers have their answers, a failure would contradict them.
      await recordEvaluateFailure(deps, payload, job, startedAt, attempt, { reply: false });
      throw error;
    }
    if (unanswered.length < payload.items.length && !attempt.final) {
      // The next attempt evaluates (and pushes) only what is still unanswered.
      await job.updateData({ ...payload, items: unanswered }).catch(() => undefined);
    }
    await recordEvaluateFailure(deps, { ...payload, items: unanswered }, job, startedAt, attempt);
    throw error;
  }
}

/**
 * Gateways and workers are expected to keep their clocks within this of each other (NTP does far better): a job
 * that ran for at least its gateway's wait less this may have had its callers sent a 504.
 */
const CLOCK_MARGIN_MS = 1000;

/** Whether the job's callers may have been sent a 504 (with their task ids) by now. */
function mayHaveTimedOut(payload: EvaluatePayload, job: Job): boolean {
  return payload.waitMs === undefined || Date.now() >= job.timestamp + payload.waitMs - CLOCK_MARGIN_MS;
}

/** How an item's task ends: failed with the refusal its caller was answered with, or completed with its results. */
function endingOf(job: Job, startedAt: Date, outcome: ItemOutcome, sentReply: unknown): EvaluationEnding {
  const { item, result } = outcome;
  const reply = sentReply === undefined ? {} : { reply: sentReply };
  return "refused" in result
    ? {
        ...recordOf(job, startedAt, item, progressOf(NONE, item.urns.length)),
        refusal: result.refused.message,
        ...reply,
      }
    : { ...recordOf(job, startedAt, item, progressOf(outcome.tally, item.urns.length)), result, ...reply };
}

/**
 * Records a failed attempt of an evaluate job in its items' task rows (the lifecycle's failAttempt: waiting for a
 * retry, or failed on the last attempt); a final failure is also sent to the waiting gateway, unless `reply` is false.
 */
export async function recordEvaluateFailure(
  deps: Pick<EvaluateDeps, "tasks" | "reply" | "logger">,
  payload: EvaluatePayload,
  job: Job,
  startedAt: Date,
  attempt: FailedEvaluationAttempt,
  { reply = true }: { reply?: boolean } = {},
): Promise<void> {
  await deps.tasks.evaluations
    .failAttempt(
      payload.items.map((item) => recordOf(job, startedAt, item, progressOf(NONE, item.urns.length))),
      attempt,
    )
    .catch(() => undefined); // PostgreSQL itself may be what failed; BullMQ still records the failure
  if (attempt.final && reply) await replyTo(deps, payload, job, { failedReason: attempt.failedReason });
}

function recordOf(job: Job, startedAt: Date, item: EvaluationItem, progress: EvaluationProgress): EvaluationRecord {
  return {
    progress,
    taskId: item.taskId,
    request: { kind: "evaluate", urns: item.urns, push: item.push, testUrns: item.testUrns },
    createdBy: item.actorUrn,
    createdAt: new Date(job.timestamp),
    startedAt,
    attemptsMade: job.attemptsMade + 1,
  };
}

/**
 * A reply that cannot be sent leaves its gateway to time out (504 naming the task ids, whose rows tell the outcome):
 * no reason to fail or redo an evaluation that is done. Resolves to whether a gateway received it.
 */
async function replyTo(
  deps: Pick<EvaluateDeps, "reply" | "logger">,
  payload: EvaluatePayload,
  job: Job,
  outcome: { returnvalue: unknown } | { failedReason: string },
): Promise<boolean> {
  if (!payload.replyTo) return false;
  return deps.reply(payload.replyTo, { jobId: job.id!, ...outcome }).catch((error: unknown) => {
    deps.logger.warn({ jobId: job.id, err: error }, "could not send an evaluation's reply");
    return false;
  });
}

/** The items of one turn split into replies of at most about RESULT_LIMITS.answerBytes of results each. */
export function replyChunks<T extends Pick<ItemOutcome, "resultsJson">>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let size = 0;
  for (const item of items) {
    let itemSize = 0;
    for (const json of Object.values(item.resultsJson ?? {})) itemSize += json.length;
    if (chunk.length > 0 && size + itemSize > RESULT_LIMITS.answerBytes) {
      chunks.push(chunk);
      chunk = [];
      size = 0;
    }
    chunk.push(item);
    size += itemSize;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function pushItemsOf(outcome: ItemOutcome, input: EvaluationInput): PushItem[] {
  return outcome.evaluations.map((evaluation) => ({
    entityType: input.entities.get(evaluation.urn)!.entityType,
    evaluation,
    evaluated: new Set(
      [...evaluation.passing, ...evaluation.failing].map((r) => r.test).concat(evaluation.notApplicable),
    ),
    actorUrn: outcome.item.actorUrn,
    ...(outcome.item.actorTokenId !== undefined && { actorTokenId: outcome.item.actorTokenId }),
  }));
}

/**
 * runTestDefinition's unsaved definitions, as tests of their own urns (named by their items only) whose actions act
 * for the caller: the answer lists what applying them would do, and what the caller may not write.
 */
function addUnsavedTests(input: EvaluationInput, items: readonly EvaluationItem[]): void {
  for (const item of items) {
    const unsaved = item.unsavedTest;
    if (!unsaved) continue;
    input.tests.push({
      urn: unsaved.urn,
      onTypes: unsaved.onTypes,
      active: false,
      hash: unsaved.hash,
      definition: unsaved.definition,
      ownerUrn: item.actorUrn,
      ownerTokenId: item.actorTokenId ?? null,
      suspended: false,
    });
  }
}

/** Whether the item applies an unsaved definition's actions (runTestDefinition's DEFAULT mode). */
function appliesActions(item: EvaluationItem): boolean {
  return item.unsavedTest?.applyActions === true;
}

/** The unsaved test of an item, as applyTestActions reads a stored one: its types, its actions, its caller. */
function unsavedActionsOf(item: EvaluationItem): Map<string, UnsavedTestActions> {
  const unsaved = item.unsavedTest!;
  const raw = (unsaved.definition as { actions?: unknown } | null)?.actions;
  if (raw === undefined) return new Map();
  return new Map([
    [
      unsaved.urn,
      {
        onTypes: unsaved.onTypes,
        owner: { urn: item.actorUrn, tokenId: item.actorTokenId ?? null, suspended: false },
        // Its caller is its owner: the INACTIVE rule, which keeps others from a draft's actions, never applies.
        active: true,
        actions: actionsFromJson(raw),
      },
    ],
  ]);
}

/** What the queue dashboard shows of one item: its refusal, or how many results of each kind it got. */
function summaryOf(outcome: ItemOutcome) {
  if ("refused" in outcome.result) return { refused: outcome.result.refused.code };
  const { passing, failing, notApplicable } = progressOf(outcome.tally, outcome.item.urns.length);
  return { urns: outcome.item.urns.length, passing, failing, notApplicable };
}

/** nothing evaluated yet */
const NONE: Tally = { entities: 0, passing: 0, failing: 0, notApplicable: 0 };

function progressOf(tally: Tally, total: number): EvaluationProgress {
  return {
    evaluated: tally.entities,
    total,
    passing: tally.passing,
    failing: tally.failing,
    notApplicable: tally.notApplicable,
    percent: tally.entities === total ? 100 : 0,
  };
}
