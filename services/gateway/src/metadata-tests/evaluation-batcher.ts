import { randomUUID } from "node:crypto";
import { every, perTurn, type Logger, type PeriodicLoop } from "@mdp/core";
import {
  checkEvaluateJobReply,
  evaluationItemReply,
  JobFailedError,
  ReplyChannelLostError,
  type EvaluationItem,
  type EvaluationItemReply,
  type Producer,
  type ReplyInbox,
} from "@mdp/queues";
import type { StoredAnswer } from "@mdp/tasks";

/** The worker answered with something this gateway cannot read (another version of it, or a bug). */
export class UnexpectedResultError extends Error {
  override readonly name = "UnexpectedResultError";
}

export interface BatchLimits {
  /** most requests in one job */
  items: number;
  /** most entities in one job (a batchEvaluate request alone may bring a thousand) */
  urns: number;
}

/**
 * A request's outcome: each urn's result as JSON text, as the worker serialized it (the caller's answer is made of
 * them without parsing them), or the refusal to answer with.
 */
export type EvaluationOutcome = (
  { resultsJson: Record<string, string> } | Extract<EvaluationItemReply, { refused: unknown }>
) & {
  /** how long the evaluation held a worker thread (ms; absent from workers of earlier versions) */
  evaluationMs?: number;
};

interface Waiting {
  item: EvaluationItem;
  resolve: (outcome: EvaluationOutcome) => void;
  reject: (error: unknown) => void;
}

/** Where the answers of requests whose reply went missing are looked for (see EvaluationBatcher, "Lost replies"). */
export interface LostReplyRecovery {
  /** the ended task rows among `taskIds`, one statement for them all (EvaluationLifecycle.storedAnswers of @mdp/tasks) */
  storedAnswers: (taskIds: readonly string[]) => Promise<StoredAnswer[]>;
  /** BullMQ's state of an evaluate job ("unknown" once it is removed) */
  jobState: (jobId: string) => Promise<string>;
  logger: Logger;
  /** a wait this old is looked up even when no reply was lost (the worker may have found no gateway to reply to) */
  checkAfterMs?: number;
  /** how often the waits due are looked up */
  intervalMs?: number;
}

/** BullMQ job states after which its handler has run for the last time (unknown: removed, having ended) */
const ENDED_JOB_STATES = new Set(["completed", "failed", "unknown"]);

/** One job being waited for. */
interface InFlight {
  jobId: string;
  startedAt: number;
  /** the inbox's loss count when the job was queued: a higher count means its replies may have been lost */
  lossesAtStart: number;
  /** the job was added to the queue (a job not added yet has no state to read) */
  queued: boolean;
  /** its requests not answered yet, by task id */
  unanswered: Map<string, Waiting>;
  /** ended rows without a kept reply, and when they were first read: answered from once a reply had time to come */
  endedRowsSeen: Map<string, number>;
  /** when the job was first read as ended with requests still unanswered after a loss */
  endedSeenAt?: number;
}

/**
 * Puts the evaluate requests of one actor that arrive together into one evaluate-tests job: those whose bodies were
 * read in the same turn of the event loop (flushed at its end by @mdp/core's perTurn, so a lone request waits for
 * nothing). Under load that turns one queue round trip and one database read per request into one per batch; each
 * request keeps its own task id and gets its own result, as soon as the worker has it: a slow request in the batch
 * does not hold the others' answers. Different actors' requests never share a job: a worker shares its job slots
 * between actors (its last free slot goes to an actor with no job there), and a job holds its slot until its slowest
 * request is done, so a job mixing one actor's slow request with another's quick one would count against the quick
 * one's actor. Rejects every request of a batch not answered yet with the batch's error: the wait timing out
 * (JobWaitTimeoutError), the job failing (JobFailedError), or the queue being unreachable.
 *
 * Lost replies: a reply sent while this gateway's reply connection is down (a Redis restart, a Cluster failover) is
 * gone, but a worker whose reply reached no gateway keeps the answer it sent in the request's task row
 * (EvaluationRow.reply). With a `recovery`, the requests whose reply may have been lost (the inbox lost its
 * connection since their job was queued) and those waiting longer than `checkAfterMs` are looked up in their task rows
 * every `intervalMs` and at each loss and reconnection, one statement for all of them, and answered from an ended row
 * as soon as there is one: with the reply it kept, exactly as that reply would have answered; a row without one (its
 * reply was received by Redis, then lost) is answered from once a reply has had `intervalMs` more to come. A job that
 * ended after a loss without any of that for its requests (its answer was not kept) is ended with
 * ReplyChannelLostError. Nothing of this costs a request answered by its reply a round trip: a wait is looked up
 * only once its reply is late or lost.
 */
export class EvaluationBatcher {
  /** each actor's requests waiting for the next flush */
  private readonly pending = new Map<string, { waiting: Waiting[]; urns: number }>();
  /** flushes, at the end of this turn, the actors whose requests came in it (those not waiting for an enqueue) */
  private readonly flushAtTurnEnd = perTurn(async (actors: string[]) => {
    for (const actor of new Set(actors)) if (!this.enqueuing.has(actor)) this.flush(actor);
    return actors.map(() => undefined);
  });
  /** the actors one of whose jobs is being added to the queue: their next requests wait for it (see submit) */
  private readonly enqueuing = new Set<string>();
  /** the jobs being waited for */
  private readonly inFlight = new Map<string, InFlight>();
  private readonly loop?: PeriodicLoop;
  private readonly stopListening?: () => void;
  private checking?: Promise<void>;
  private checkAgain = false;
  private readonly checkAfterMs: number;
  private readonly intervalMs: number;

  constructor(
    private readonly producer: Producer<"evaluate">,
    private readonly inbox: Pick<ReplyInbox, "channelFor" | "enqueueAndCollect" | "end" | "onTrouble" | "losses">,
    private readonly timeoutMs: number,
    private readonly limits: BatchLimits = { items: 100, urns: 1000 },
    private readonly recovery?: LostReplyRecovery,
  ) {
    this.checkAfterMs = recovery?.checkAfterMs ?? 2_000;
    this.intervalMs = recovery?.intervalMs ?? 1_000;
    if (!recovery) return;
    this.loop = every("evaluation-lost-replies", this.intervalMs, () => this.check(), { logger: recovery.logger });
    this.stopListening = inbox.onTrouble(() => {
      this.check().catch((error: unknown) =>
        recovery.logger.warn({ err: error }, "could not look up the stored answers of evaluations"),
      );
    });
  }

  /** Stops looking up lost replies (the waits under way end with their replies or timeouts). */
  async close(): Promise<void> {
    this.stopListening?.();
    await this.loop?.stop();
    await this.checking;
  }

  submit(item: EvaluationItem): Promise<EvaluationOutcome> {
    return new Promise((resolve, reject) => {
      const actor = item.actorUrn;
      let group = this.pending.get(actor);
      if (group && group.urns + item.urns.length > this.limits.urns) {
        this.flush(actor);
        group = undefined;
      }
      if (!group) {
        group = { waiting: [], urns: 0 };
        this.pending.set(actor, group);
      }
      group.waiting.push({ item, resolve, reject });
      group.urns += item.urns.length;
      if (group.waiting.length >= this.limits.items) {
        this.flush(actor);
      } else if (this.enqueuing.has(actor)) {
        // Its previous job is still on its way to Redis: this request goes into the next job, sent as soon as that
        // one is queued. Under load an actor's requests then share fewer, larger jobs (each job costs the gateway,
        // Redis and the worker the same whatever its size); a lone request never finds one in flight.
      } else {
        void this.flushAtTurnEnd(actor);
      }
    });
  }

  private flush(actor: string): void {
    const batch = this.pending.get(actor)?.waiting ?? [];
    this.pending.delete(actor);
    if (batch.length === 0) return;
    const jobId = randomUUID();
    const items = batch.map((w) => w.item);
    const unanswered = new Map(batch.map((w) => [w.item.taskId, w]));
    const job: InFlight = {
      jobId,
      startedAt: Date.now(),
      lossesAtStart: this.inbox.losses,
      queued: false,
      unanswered,
      endedRowsSeen: new Map(),
    };
    if (this.recovery) this.inFlight.set(jobId, job);
    // Once the job is queued, the actor's requests that came meanwhile go as the next job. If it could not be queued,
    // they fail with it: they waited on the same Redis, and another attempt would hold them for its timeout again.
    this.enqueuing.add(actor);
    let released = false;
    const release = (error?: unknown) => {
      if (released) return;
      released = true;
      this.enqueuing.delete(actor);
      if (error === undefined) {
        if (this.pending.has(actor)) this.flush(actor);
        return;
      }
      const waiting = this.pending.get(actor)?.waiting ?? [];
      this.pending.delete(actor);
      for (const w of waiting) w.reject(error);
    };
    this.inbox
      .enqueueAndCollect(
        jobId,
        this.timeoutMs,
        async () => {
          try {
            await this.producer.enqueue(jobId, {
              kind: "evaluate",
              items,
              replyTo: this.inbox.channelFor(jobId),
              waitMs: this.timeoutMs,
            });
            job.queued = true;
          } catch (error) {
            release(error);
            throw error;
          }
          release();
        },
        // The worker answers each request as soon as it is done (a slow one never holds the others' answers): each
        // reply answers the requests in it at once, and the last one (not partial) the job's remaining requests.
        (returned) => {
          const parsed = checkEvaluateJobReply(returned);
          if (!parsed.success) throw new UnexpectedResultError(parsed.error.message);
          for (const [taskId, reply] of Object.entries(parsed.data.items)) {
            const waiting = unanswered.get(taskId);
            if (!waiting) continue; // answered already (a retried attempt answers again), or not this job's
            unanswered.delete(taskId);
            try {
              waiting.resolve(outcomeOf(waiting.item, reply));
            } catch (error) {
              waiting.reject(error);
            }
          }
          if (parsed.data.partial) return unanswered.size === 0;
          for (const waiting of unanswered.values())
            waiting.reject(new UnexpectedResultError("no result for this request"));
          unanswered.clear();
          return true;
        },
      )
      .catch((error: unknown) => {
        for (const waiting of unanswered.values()) waiting.reject(error);
      })
      .finally(() => {
        release(); // refused before its enqueue ran (no reply channel): nothing is in flight
        this.inFlight.delete(jobId);
      });
  }

  /** Looks up the waits that are due (see "Lost replies"); one look-up at a time, a request made meanwhile runs after. */
  private check(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true;
      return this.checking;
    }
    this.checking = (async () => {
      try {
        do {
          this.checkAgain = false;
          await this.lookUp();
        } while (this.checkAgain);
      } finally {
        this.checking = undefined;
      }
    })();
    return this.checking;
  }

  private async lookUp(): Promise<void> {
    const recovery = this.recovery!;
    const now = Date.now();
    const mayHaveLost = (job: InFlight) => this.inbox.losses > job.lossesAtStart;
    const due = [...this.inFlight.values()].filter(
      (job) => job.unanswered.size > 0 && (mayHaveLost(job) || now - job.startedAt >= this.checkAfterMs),
    );
    if (due.length === 0) return;
    // States before rows: a worker writes its rows before its job ends, so the rows of a job read as ended are there
    // for the read that follows.
    const lostJobs = due.filter((job) => job.queued && mayHaveLost(job));
    const states = await Promise.all(lostJobs.map((job) => recovery.jobState(job.jobId).catch(() => "unreadable")));
    const ended = new Set(lostJobs.filter((_, i) => ENDED_JOB_STATES.has(states[i]!)).map((job) => job.jobId));
    const rows = new Map(
      (await recovery.storedAnswers(due.flatMap((job) => [...job.unanswered.keys()]))).map((row) => [row.taskId, row]),
    );
    for (const job of due) {
      for (const [taskId, waiting] of [...job.unanswered]) {
        const row = rows.get(taskId);
        if (!row) continue;
        if (row.reply === null || row.reply === undefined) {
          // Its reply was received by Redis: it may yet arrive, with the exact text the row's result lacks.
          const seenAt = job.endedRowsSeen.get(taskId);
          if (seenAt === undefined) job.endedRowsSeen.set(taskId, now);
          if (seenAt === undefined || now - seenAt < this.intervalMs) continue;
        }
        job.unanswered.delete(taskId);
        answerFromRow(waiting, row, job.jobId);
      }
      if (job.unanswered.size === 0) {
        this.inbox.end(job.jobId);
      } else if (ended.has(job.jobId)) {
        // Ended, and still no reply nor kept answer for these requests: its reply went to the lost connection.
        job.endedSeenAt ??= now;
        if (now - job.endedSeenAt >= this.intervalMs) this.inbox.end(job.jobId, new ReplyChannelLostError(job.jobId));
      }
    }
  }
}

/** Answers a request from its ended task row, as the reply the row stands for would have. */
function answerFromRow(waiting: Waiting, row: StoredAnswer, jobId: string): void {
  try {
    if (row.state === "cancelled") {
      waiting.resolve({ refused: { code: "CONFLICT", message: `Task ${row.taskId} was cancelled` } });
      return;
    }
    if ((row.reply === null || row.reply === undefined) && row.state === "failed") {
      waiting.reject(new JobFailedError(jobId, row.failedReason ?? "The evaluation failed in the worker."));
      return;
    }
    const parsed = evaluationItemReply.safeParse(row.reply ?? row.result);
    if (!parsed.success) throw new UnexpectedResultError(parsed.error.message);
    waiting.resolve(outcomeOf(waiting.item, parsed.data));
  } catch (error) {
    waiting.reject(error);
  }
}

/** The item's reply as its request's outcome, with a result for each of its urns; throws UnexpectedResultError. */
function outcomeOf(item: EvaluationItem, reply: EvaluationItemReply): EvaluationOutcome {
  const charged = reply.evaluationMs === undefined ? {} : { evaluationMs: reply.evaluationMs };
  if ("refused" in reply) return { refused: reply.refused, ...charged };
  const resultsJson =
    "resultsJson" in reply
      ? reply.resultsJson
      : Object.fromEntries(Object.entries(reply.results).map(([urn, result]) => [urn, JSON.stringify(result)]));
  const missing = item.urns.find((urn) => resultsJson[urn] === undefined);
  if (missing !== undefined) throw new UnexpectedResultError(`no result for ${missing}`);
  return { resultsJson, ...charged };
}
