import { randomUUID } from "node:crypto";
import {
  AppError,
  badInput,
  currentLogContext,
  OUTAGE_RETRY_AFTER_SECONDS,
  outageError,
  parseUrn,
  serviceUnavailable,
  type EntityRegistry,
  type Logger,
} from "@mdp/core";
import { readerPosition, type Database } from "@mdp/db";
import { JobFailedError, JobWaitTimeoutError, ReplyChannelLostError } from "@mdp/queues";
import { EvaluationLifecycle } from "@mdp/tasks";
import type { Actor } from "../auth/actor";
import { JsonText } from "../shared/json-text";
import type { RateLimits } from "../shared/rate-limits";
import type { PolicyEngine } from "../policies/policy-engine";
import { UnexpectedResultError, type EvaluationBatcher, type EvaluationOutcome } from "./evaluation-batcher";
import {
  fromBatchEvaluate,
  fromEvaluate,
  type BatchEvaluateBody,
  type EvaluateBody,
  type EvaluationRequest,
} from "./evaluation-request";

const TEST_RESULTS_ASPECT = "testResults";

/** What the worker answers for one entity, as far as the operations that read it need it. */
export interface EvaluatedEntity {
  urn: string;
  passing: Array<{ test: string }>;
  failing: Array<{ test: string }>;
  notApplicable: string[];
}
/** BullMQ job states after which its handler has run for the last time (unknown: removed, having ended) */
const ENDED_JOB_STATES = new Set(["completed", "failed", "unknown"]);

export interface EvaluationServiceDeps {
  db: Database;
  registry: EntityRegistry;
  engine: PolicyEngine;
  batcher: EvaluationBatcher;
  timeoutMs: number;
  logger: Logger;
  /** BullMQ's state of an evaluate job ("unknown" once it is removed) */
  jobState: (jobId: string) => Promise<string>;
  rateLimits: Pick<RateLimits, "consume" | "refuseIfSpent" | "charge">;
}

/**
 * `POST /gms/test?action=evaluate` and `batchEvaluate`: the request is checked here (fields, urns, privileges), then
 * run by the evaluation worker, which reads the entities and tests, refuses unknown ones (404 naming them), evaluates,
 * pushes and sends the results back; this waits for them on the gateway's reply channel (ReplyInbox). Nothing on this
 * path touches PostgreSQL: the worker's one read (shared by the requests batched into one job) is all an evaluation
 * costs it, unless its reply is late or lost: then it is answered from the answer its worker kept, read with those of
 * every other such request in one statement (EvaluationBatcher, "Lost replies"). When the wait times out, the 504 names the task id, and the task row is written here first so that
 * getTaskStatus can follow it even before the worker gets to it; the worker completes it (an evaluation answered in
 * time has no row: nobody was given its task id).
 */
export class EvaluationService {
  private readonly db: Database;
  private readonly registry: EntityRegistry;
  private readonly engine: PolicyEngine;
  private readonly batcher: EvaluationBatcher;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly jobState: (jobId: string) => Promise<string>;
  private readonly rateLimits: EvaluationServiceDeps["rateLimits"];

  constructor(deps: EvaluationServiceDeps) {
    this.db = deps.db;
    this.registry = deps.registry;
    this.engine = deps.engine;
    this.batcher = deps.batcher;
    this.timeoutMs = deps.timeoutMs;
    this.logger = deps.logger;
    this.jobState = deps.jobState;
    this.rateLimits = deps.rateLimits;
  }

  /**
   * The entity's result (an EntityEvaluationResult), as the worker serialized it. The action router has checked
   * VIEW_TESTS and parsed the body (test.routes.ts).
   */
  async evaluate(actor: Actor, body: EvaluateBody): Promise<JsonText> {
    const request = fromEvaluate(body);
    const resultsJson = await this.run(actor, request);
    return new JsonText(resultsJson[request.urns[0]!]!);
  }

  /** `{"results": {urn: EntityEvaluationResult}}`, in the order the urns were asked for. */
  async batchEvaluate(actor: Actor, body: BatchEvaluateBody): Promise<JsonText> {
    const request = fromBatchEvaluate(body);
    const resultsJson = await this.run(actor, request);
    const entries = request.urns.map((urn) => `${JSON.stringify(urn)}:${resultsJson[urn]!}`);
    return new JsonText(`{"results":{${entries.join(",")}}}`);
  }

  /**
   * One entity's result (an EntityEvaluationResult, parsed) for a request made by another operation rather than the
   * HTTP actions: runTestDefinition (an unsaved definition) and runTests (every ACTIVE test, pushed). The same path as
   * evaluate: the evaluation worker's threads and limits, the caller's rate limits; the caller checked its privileges.
   */
  async evaluateOne(actor: Actor, request: EvaluationRequest): Promise<EvaluatedEntity> {
    const resultsJson = await this.run(actor, request);
    return JSON.parse(resultsJson[request.urns[0]!]!) as EvaluatedEntity;
  }

  /**
   * Each urn's result as JSON text (see EvaluationOutcome). The rate limits are met here, once the caller's
   * privileges and body have passed (a refused request costs the caller nothing) and before any work: an actor whose
   * evaluation-time budget is spent is refused, then the entities are counted; once answered, the time the request's
   * evaluation held a worker thread is charged to the actor, refusals at the time limit included.
   */
  private async run(actor: Actor, request: EvaluationRequest): Promise<Record<string, string>> {
    if (request.push) {
      await this.engine.require(actor, "MANAGE_TESTS", "push metadata test results");
      this.refuseUnstorable(request.urns);
    }
    await this.rateLimits.refuseIfSpent(actor, "evaluationTime");
    await this.rateLimits.consume(actor, "evaluations", request.urns.length);
    // Failed rules show the values found only to a caller who may read the entity: decided here from the cached
    // privileges (no read per request), carried in the job, so the worker never builds values for anyone else.
    const showValues = await this.engine.has(actor, "GET_ENTITY");
    const taskId = randomUUID();
    let outcome: EvaluationOutcome;
    try {
      // The request's id travels in its item: the job that carries it is queued later, maybe in another request.
      const requestId = currentLogContext()?.requestId;
      const readAfter = await readerPosition();
      outcome = await this.batcher.submit({
        taskId,
        ...request,
        actorUrn: actor.urn,
        ...(actor.tokenId !== undefined && { actorTokenId: actor.tokenId }),
        requestId,
        showValues,
        // A write of the caller's just before (an ingestion): the worker reads a replica only once it has it.
        ...(readAfter !== undefined && { readAfter }),
      });
    } catch (error) {
      throw await this.explain(actor, taskId, request, error);
    }
    await this.rateLimits.charge(actor, "evaluationTime", outcome.evaluationMs ?? 0);
    if ("refused" in outcome) throw new AppError(outcome.refused.code, outcome.refused.message);
    return outcome.resultsJson;
  }

  /** Results can only be pushed to entity types whose registry entry has the testResults aspect. */
  private refuseUnstorable(urns: readonly string[]): void {
    for (const urn of urns) {
      const { entityType } = parseUrn(urn);
      if (!this.registry.entityTypes().includes(entityType)) continue; // nothing of it is stored: a 404 follows
      if (!this.registry.aspectsOf(entityType).has(TEST_RESULTS_ASPECT)) {
        throw badInput(
          `push: entity type ${entityType} has no ${TEST_RESULTS_ASPECT} aspect in the entity registry, so results ` +
            `for ${urn} cannot be stored; evaluate it with push: false`,
        );
      }
    }
  }

  /**
   * Turns a failed wait into what the caller sees. A task id is handed out only once its task row exists, so that
   * getTaskStatus can always look it up: when the row cannot be written (PostgreSQL down), the answer has no id.
   * PostgreSQL or Redis being unreachable, here or in the worker (whose retries outlast a short restart), is a 503
   * saying which.
   */
  private async explain(actor: Actor, taskId: string, request: EvaluationRequest, error: unknown): Promise<AppError> {
    if (error instanceof JobWaitTimeoutError) {
      try {
        await this.recordPending(actor, taskId, error.jobId, request);
      } catch (cause) {
        this.logger.warn({ taskId, err: cause }, "could not record a timed-out evaluation's task row");
        return (
          outageError(cause) ??
          new AppError("GATEWAY_TIMEOUT", `The evaluation did not finish within ${this.timeoutMs} ms.`)
        );
      }
      return new AppError(
        "GATEWAY_TIMEOUT",
        `The evaluation did not finish within ${this.timeoutMs} ms. It goes on as task ${taskId}: follow it with ` +
          `getTaskStatus.`,
        { taskId },
      );
    }
    if (error instanceof ReplyChannelLostError) {
      // The reply cannot arrive: this gateway's reply connection to Redis is down as the request came (nothing was
      // queued), or dropped and the job ended without its answer arriving or being kept (EvaluationBatcher, "Lost
      // replies"). Redis's 503 rather than a 504 in EVALUATE_TIMEOUT_MS. No task id: whatever the job pushes is
      // stored as usual, and evaluating again is safe (an unchanged result writes nothing).
      this.logger.warn({ taskId }, "an evaluation's reply connection was interrupted");
      return serviceUnavailable("Redis");
    }
    if (error instanceof UnexpectedResultError) {
      this.logger.error({ taskId, err: error.message }, "the evaluation worker returned an unexpected result");
      // No task id for the caller: the worker answered in time, so it wrote no row for getTaskStatus to find.
      return new AppError("INTERNAL_SERVER_ERROR", "The evaluation worker returned an unexpected result.");
    }
    if (error instanceof JobFailedError) {
      const recorded = await this.recordFailed(actor, taskId, request, error.failedReason).then(
        () => true,
        (cause: unknown) => {
          this.logger.warn({ taskId, err: cause }, "could not record a failed evaluation's task row");
          return false;
        },
      );
      const outage = outageError(error.failedReason, recorded ? { taskId } : {});
      if (outage) return outage;
      if (!recorded) return new AppError("INTERNAL_SERVER_ERROR", "The evaluation failed in the worker.");
      return new AppError(
        "INTERNAL_SERVER_ERROR",
        `The evaluation failed in the worker; getTaskStatus ${taskId} says why.`,
        { taskId },
      );
    }
    const outage = outageError(error);
    if (outage) return outage;
    this.logger.error({ taskId, err: error }, "could not queue an evaluation");
    return new AppError("SERVICE_UNAVAILABLE", "The evaluation queue is unavailable. Try again later.", {
      retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS,
    });
  }

  /**
   * The row of an evaluation that failed for good, unless its worker wrote one (ON CONFLICT DO NOTHING): a worker
   * that could not reach PostgreSQL could not, and the caller is about to be given the task id.
   */
  /** The rows of 504'd evaluations (@mdp/tasks); the gateway holds no lease, so owner and lease are unused. */
  private evaluationTasks(): EvaluationLifecycle {
    return new EvaluationLifecycle(this.db.pool, { owner: "gateway", leaseMs: 0 });
  }

  private async recordFailed(actor: Actor, taskId: string, request: EvaluationRequest, reason: string): Promise<void> {
    const progress = { evaluated: 0, total: request.urns.length, passing: 0, failing: 0, notApplicable: 0, percent: 0 };
    await this.evaluationTasks().failedUnrun(
      { taskId, request: { kind: "evaluate", ...request }, progress, createdBy: actor.urn },
      reason,
    );
  }

  /**
   * The row of an evaluation its caller stopped waiting for, so that getTaskStatus finds it at once. The worker
   * completes it; if the worker got there first, its row stands (ON CONFLICT DO NOTHING).
   *
   * The worker writes the rows of a job that ran as long as this wait, but a job can also have ended in time and
   * its reply have been lost (a dropped subscriber connection) or read too late (this process's event loop behind).
   * Its worker then wrote no row, and none would complete this one: so once it is written, a job already ended
   * (and rows are written before a job ends) with the row still waiting ends it as failed, saying so, rather than
   * leaving a task that stays waiting for good.
   */
  private async recordPending(actor: Actor, taskId: string, jobId: string, request: EvaluationRequest): Promise<void> {
    const progress = { evaluated: 0, total: request.urns.length, passing: 0, failing: 0, notApplicable: 0, percent: 0 };
    await this.evaluationTasks().timedOut({
      taskId,
      request: { kind: "evaluate", ...request },
      progress,
      createdBy: actor.urn,
    });
    if (!ENDED_JOB_STATES.has(await this.jobState(jobId))) return;
    await this.evaluationTasks().failUnanswered(
      taskId,
      "The evaluation finished, but its answer reached the gateway after the caller's timeout and its result " +
        "was not kept; evaluate again.",
    );
  }
}
