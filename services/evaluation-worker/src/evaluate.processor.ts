import type { Job } from "bullmq";
import { inTransaction, ownerKey, type OwnerPrivileges } from "@mdp/db";
import type { Privilege } from "@mdp/core";
import {
  actionsFromJson,
  answerTooLarge,
  entityResultTooLarge,
  evaluationWithoutValues,
  privilegesLacking,
  RESULT_LIMITS,
  TestDefinitionError,
  utf8Bytes,
  type EntityEvaluation,
  type TestActions,
} from "@mdp/metadata-tests";
import {
  toItemReply,
  type EvaluateJobReply,
  type EvaluateJobResult,
  type EvaluationItem,
  type EvaluationItemReply,
  type EvaluationItemResult,
  type Payload,
} from "@mdp/queues";
import type { EvaluationInput, StoredTest } from "./evaluation.store";
import type { EvaluateDeps } from "./evaluation-deps";
import { countRequest } from "./evaluation-metrics";
import type { PushItem } from "./results.pusher";
import type { UnsavedTestActions } from "./test-actions";
import type { EvaluationProgress, EvaluationRow } from "@mdp/tasks";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";

export type EvaluatePayload = Extract<Payload<"evaluate">, { kind: "evaluate" }>;

/** What one item came to, before it is answered and recorded. */
interface ItemOutcome {
  item: EvaluationItem;
  result: EvaluationItemResult;
  /** the evaluations with the values found (cut) when there are any: what a push stores */
  evaluations: EntityEvaluation[];
  /** each urn's result as answered (its values only for a caller who may read them), serialized once */
  resultsJson?: Record<string, string>;
  /** how long its evaluation held a thread: the gateway charges it to the caller's evaluation-time budget */
  threadMs?: number;
}

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
    });
    addUnsavedTests(input, payload.items);
    await markOwnersLacking(input.tests, deps.ownerPrivileges);
    const evaluatedAt = Date.now();
    const cancelled = new Set(input.cancelled);
    const withRow = new Set(input.started);
    const finish = perTurn(async (done: ItemOutcome[]): Promise<ItemOutcome[]> => {
      let ready = done;
      const pushing = done.filter((o) => (o.item.push || appliesActions(o.item)) && !("refused" in o.result));
      if (pushing.length > 0) {
        const claimed = pushing.map((o) => taskRowOf(job, startedAt, o.item, activeRow(o.item)));
        for (const row of claimed) withRow.add(row.taskId);
        const stopped = await inTransaction(deps.db.pool, (client) => deps.evaluations.claimForPush(client, claimed));
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
      for (const o of ready) countRequest("refused" in o.result, o.evaluations);
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
    await deps.evaluations.record(
      outcomes
        .filter(
          (o) =>
            !cancelled.has(o.item.taskId) &&
            (recordAll || maybeTimedOut.has(o.item.taskId) || withRow.has(o.item.taskId)),
        )
        .map((o) => {
          const sentReply = maybeTimedOut.get(o.item.taskId);
          return taskRowOf(job, startedAt, o.item, { ...endOf(o), ...(sentReply && { reply: sentReply }) });
        }),
    );
    // Without replyTo the gateway reads the job's return value. With it, the results went to the gateway and into the
    // task rows; the job keeps a summary for the queue dashboard, so Redis does not store every result twice more (the
    // job, and its completed event).
    if (!payload.replyTo) return { items: Object.fromEntries(outcomes.map((o) => [o.item.taskId, o.result])) };
    return { tasks: Object.fromEntries(outcomes.map((o) => [o.item.taskId, summaryOf(o)])) };
  } catch (error) {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const message = error instanceof Error ? error.message : String(error);
    const unanswered = payload.items.filter((i) => !answered.has(i.taskId));
    const failedReason = lastAttempt ? message : `Attempt ${job.attemptsMade + 1} failed, retrying: ${message}`;
    if (unanswered.length === 0) {
      // Only the task rows failed to be written: the callers have their answers, a failure would contradict them.
      await recordEvaluateFailure(deps, payload, job, startedAt, { failedReason, final: lastAttempt, reply: false });
      throw error;
    }
    if (unanswered.length < payload.items.length && !lastAttempt) {
      // The next attempt evaluates (and pushes) only what is still unanswered.
      await job.updateData({ ...payload, items: unanswered }).catch(() => undefined);
    }
    await recordEvaluateFailure(deps, { ...payload, items: unanswered }, job, startedAt, {
      failedReason,
      final: lastAttempt,
    });
    throw error;
  }
}

/**
 * Runs `run` once per turn of the event loop on the values given in that turn, each caller getting the result at its
 * value's index (or `run`'s error).
 */
function perTurn<T, R>(run: (batch: T[]) => Promise<R[]>): (value: T) => Promise<R> {
  let pending: Array<{ value: T; resolve: (result: R) => void; reject: (error: unknown) => void }> = [];
  return (value) =>
    new Promise<R>((resolve, reject) => {
      if (pending.length === 0) {
        setImmediate(() => {
          const batch = pending;
          pending = [];
          run(batch.map((b) => b.value)).then(
            (results) => batch.forEach((b, i) => b.resolve(results[i]!)),
            (error: unknown) => batch.forEach((b) => b.reject(error)),
          );
        });
      }
      pending.push({ value, resolve, reject });
    });
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

/** How an item's task row ends: failed with the refusal, or completed with its results. */
function endOf(outcome: ItemOutcome): Pick<EvaluationRow, "state" | "progress" | "result" | "failedReason"> {
  return "refused" in outcome.result
    ? {
        state: "failed",
        progress: progressOf([], outcome.item.urns.length),
        failedReason: outcome.result.refused.message,
      }
    : {
        state: "completed",
        progress: progressOf(outcome.evaluations, outcome.item.urns.length),
        result: outcome.result,
      };
}

/**
 * Records a failed attempt of an evaluate job in its items' task rows, as waiting for a retry or, when `final`, as
 * failed; a final failure is also sent to the waiting gateway, unless `reply` is false.
 */
export async function recordEvaluateFailure(
  deps: Pick<EvaluateDeps, "evaluations" | "reply" | "logger">,
  payload: EvaluatePayload,
  job: Job,
  startedAt: Date,
  { failedReason, final, reply = true }: { failedReason: string; final: boolean; reply?: boolean },
): Promise<void> {
  await deps.evaluations
    .record(
      payload.items.map((item) =>
        taskRowOf(job, startedAt, item, {
          state: final ? "failed" : "waiting",
          progress: progressOf([], item.urns.length),
          failedReason,
        }),
      ),
    )
    .catch(() => undefined); // PostgreSQL itself may be what failed; BullMQ still records the failure
  if (final && reply) await replyTo(deps, payload, job, { failedReason });
}

function taskRowOf(
  job: Job,
  startedAt: Date,
  item: EvaluationItem,
  row: Pick<EvaluationRow, "state" | "progress" | "result" | "failedReason" | "reply">,
): EvaluationRow {
  return {
    ...row,
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

/**
 * Evaluates a job's items in the evaluation pool's threads (see EvaluationPool), the items of one actor together as
 * one task: the gateway batches one actor's requests into a job, never two actors', so a slow item can hold only its
 * own actor's answers, while a job of quick items costs one round trip to a thread rather than one per request (at
 * 50 concurrent requests, a task per request took the evaluate benchmark from 0.54x to 0.34x of a bare round trip).
 * A refusal for an unknown entity or test, or for a cancelled task, is decided here. A request stopped at the time or
 * memory limit is refused naming the limit and the test (a 400: its tests cannot be evaluated on its entities within
 * this service's limits, and retrying cannot change that), and the others of its task run again; so is one needing a
 * test whose stored definition breaks a definition limit (a row stored before the limit existed).
 */
function evaluateItems(
  deps: EvaluateDeps,
  items: readonly EvaluationItem[],
  input: EvaluationInput,
  at: number,
): Array<Promise<ItemOutcome[]>> {
  const groups: Array<Promise<ItemOutcome[]>> = [];
  const byActor = new Map<string, EvaluationItem[]>();
  for (const item of items) {
    const refused = refusalOf(item, input);
    if (refused) groups.push(Promise.resolve([refused]));
    else byActor.set(item.actorUrn, [...(byActor.get(item.actorUrn) ?? []), item]);
  }
  for (const [actor, group] of byActor) groups.push(evaluateGroup(deps, actor, group, input, at));
  return groups;
}

async function evaluateGroup(
  deps: EvaluateDeps,
  actor: string,
  group: EvaluationItem[],
  input: EvaluationInput,
  at: number,
): Promise<ItemOutcome[]> {
  const tests = input.tests.filter((t) =>
    group.some((item) => (item.testUrns ? item.testUrns.includes(t.urn) : t.active)),
  );
  // Its actor's share of the threads (see EvaluationPool), and the thread time to charge to it.
  // Values are built only for a caller who may read them (GET_ENTITY, decided by its gateway) or to be stored.
  const { outcomes, threadMs } = await deps.pool.evaluateTimed(
    { actor, at, tests, entities: input.entities },
    group.map((item) => ({
      urns: item.urns,
      testUrns: item.testUrns,
      withValues: item.push || item.showValues === true,
    })),
  );
  // The task's thread time, shared by its requests: all of one actor, whose budget the gateway charges.
  const share = threadMs / group.length;
  return group.map((item, i) => {
    const outcome = outcomes[i]!;
    if (outcome instanceof EvaluationLimitError || outcome instanceof StoredDefinitionError) {
      return { ...refusal(item, "BAD_USER_INPUT", outcome.message), threadMs: share };
    }
    // Evaluated with values only to push them: the answer hides them again (without a push there are none to hide).
    const shown = item.showValues === true || !item.push ? outcome : outcome.map(evaluationWithoutValues);
    const serialized = serializeResults(shown);
    if ("tooLarge" in serialized) return { ...refusal(item, "BAD_USER_INPUT", serialized.tooLarge), threadMs: share };
    return {
      item,
      result: { results: Object.fromEntries(shown.map((e) => [e.urn, e])) },
      resultsJson: serialized.resultsJson,
      evaluations: outcome,
      threadMs: share,
    };
  });
}

/**
 * Each urn's result as JSON text, or why the request is refused: one entity's result over RESULT_LIMITS.entityBytes,
 * or all of them together over RESULT_LIMITS.answerBytes (a 400 naming the limit; nothing is pushed). The results
 * are serialized once, here, and the checks cost their lengths (bytes are counted only when the length allows more).
 */
function serializeResults(
  evaluations: readonly EntityEvaluation[],
): { resultsJson: Record<string, string> } | { tooLarge: string } {
  const resultsJson: Record<string, string> = {};
  let characters = 0;
  for (const evaluation of evaluations) {
    const json = JSON.stringify(evaluation);
    const bytes = utf8Bytes(json, RESULT_LIMITS.entityBytes);
    if (bytes > RESULT_LIMITS.entityBytes) return { tooLarge: entityResultTooLarge(evaluation, bytes) };
    characters += json.length;
    resultsJson[evaluation.urn] = json;
  }
  if (characters * 3 > RESULT_LIMITS.answerBytes) {
    let bytes = 0;
    for (const json of Object.values(resultsJson)) bytes += Buffer.byteLength(json, "utf8");
    if (bytes > RESULT_LIMITS.answerBytes) return { tooLarge: answerTooLarge(evaluations.length, bytes) };
  }
  return { resultsJson };
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

function refusal(
  item: EvaluationItem,
  code: "NOT_FOUND" | "CONFLICT" | "BAD_USER_INPUT",
  message: string,
): ItemOutcome {
  return { item, result: { refused: { code, message } }, evaluations: [] };
}

/** The refusal of an item that is not evaluated at all (cancelled, or naming what does not exist), if any. */
function refusalOf(item: EvaluationItem, input: EvaluationInput): ItemOutcome | undefined {
  if (input.cancelled.has(item.taskId)) return cancelledOutcome(item);
  const known = new Set(input.tests.map((t) => t.urn));
  const missing = [
    ...describeMissing(
      "Entity",
      "Entities",
      item.urns.filter((urn) => !input.entities.has(urn)),
    ),
    ...describeMissing(
      "Test",
      "Tests",
      (item.testUrns ?? []).filter((urn) => !known.has(urn)),
    ),
  ];
  return missing.length > 0 ? refusal(item, "NOT_FOUND", missing.join("; ")) : undefined;
}

function activeRow(item: EvaluationItem): Pick<EvaluationRow, "state" | "progress"> {
  return { state: "active", progress: progressOf([], item.urns.length) };
}

/** A request whose task was cancelled (only a caller that got a 504 knows the task id): refused, nothing pushed. */
function cancelledOutcome(item: EvaluationItem): ItemOutcome {
  return refusal(item, "CONFLICT", `Task ${item.taskId} was cancelled`);
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
        actions: actionsFromJson(raw),
      },
    ],
  ]);
}

/**
 * Sets on each test with actions what its owner lacks of their privileges (StoredTest.ownerLacks), each owner's grants
 * read once, so that the answer lists the actions a push would leave out. Tests without actions read nothing: the
 * evaluations most jobs make cost no more than before. A push checks the owners again, in its own transaction.
 */
async function markOwnersLacking(tests: StoredTest[], ownerPrivileges: OwnerPrivileges): Promise<void> {
  const grants = new Map<string, Promise<ReadonlySet<Privilege>>>();
  for (const test of tests) {
    const raw = (test.definition as { actions?: unknown } | null)?.actions;
    if (raw === undefined) continue;
    let actions: TestActions;
    try {
      actions = actionsFromJson(raw);
    } catch (error) {
      if (error instanceof TestDefinitionError) continue; // the evaluation refuses the stored definition itself
      throw error;
    }
    const owner = { urn: test.ownerUrn, tokenId: test.ownerTokenId, suspended: test.suspended };
    const key = ownerKey(owner);
    if (!grants.has(key)) grants.set(key, ownerPrivileges(owner));
    const lacking = privilegesLacking(actions, await grants.get(key)!);
    if (lacking.length > 0) test.ownerLacks = lacking;
  }
}

function describeMissing(one: string, many: string, urns: readonly string[]): string[] {
  if (urns.length === 0) return [];
  return [urns.length === 1 ? `${one} ${urns[0]} does not exist` : `${many} ${urns.join(", ")} do not exist`];
}

/** What the queue dashboard shows of one item: its refusal, or how many results of each kind it got. */
function summaryOf(outcome: ItemOutcome) {
  if ("refused" in outcome.result) return { refused: outcome.result.refused.code };
  const { passing, failing, notApplicable } = progressOf(outcome.evaluations, outcome.item.urns.length);
  return { urns: outcome.item.urns.length, passing, failing, notApplicable };
}

function progressOf(evaluations: readonly EntityEvaluation[], total: number): EvaluationProgress {
  const count = (pick: (e: EntityEvaluation) => unknown[]) => evaluations.reduce((n, e) => n + pick(e).length, 0);
  return {
    evaluated: evaluations.length,
    total,
    passing: count((e) => e.passing),
    failing: count((e) => e.failing),
    notApplicable: count((e) => e.notApplicable),
    percent: evaluations.length === total ? 100 : 0,
  };
}
