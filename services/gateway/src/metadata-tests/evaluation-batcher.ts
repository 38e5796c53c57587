import { randomUUID } from "node:crypto";
import {
  evaluateJobReply,
  type EvaluationItem,
  type EvaluationItemReply,
  type Producer,
  type ReplyInbox,
} from "@mdp/queues";

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

/**
 * Puts the evaluate requests of one actor that arrive together into one evaluate-tests job: those whose bodies were
 * read in the same turn of the event loop (flushed with setImmediate, so a lone request waits for nothing). Under load
 * that turns one queue round trip and one database read per request into one per batch; each request keeps
 * its own task id and gets its own result, as soon as the worker has it: a slow request in the batch does not hold the
 * others' answers. Different actors' requests never share a job: a worker shares its job slots between actors (its
 * last free slot goes to an actor with no job there), and a job holds its slot until its slowest request is done, so
 * a job mixing one actor's slow request with another's quick one would count against the quick one's actor.
 * Rejects every request of a batch not answered yet with the batch's error: the wait timing out
 * (JobWaitTimeoutError), the job failing (JobFailedError), or the queue being unreachable.
 */
export class EvaluationBatcher {
  /** each actor's requests waiting for the next flush */
  private readonly pending = new Map<string, { waiting: Waiting[]; urns: number }>();
  private scheduled = false;

  constructor(
    private readonly producer: Producer<"evaluate">,
    private readonly inbox: Pick<ReplyInbox, "channel" | "enqueueAndCollect">,
    private readonly timeoutMs: number,
    private readonly limits: BatchLimits = { items: 100, urns: 1000 },
  ) {}

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
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          for (const pendingActor of [...this.pending.keys()]) this.flush(pendingActor);
        });
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
    this.inbox
      .enqueueAndCollect(
        jobId,
        this.timeoutMs,
        () =>
          this.producer.enqueue(jobId, {
            kind: "evaluate",
            items,
            replyTo: this.inbox.channel,
            waitMs: this.timeoutMs,
          }),
        // The worker answers each request as soon as it is done (a slow one never holds the others' answers): each
        // reply answers the requests in it at once, and the last one (not partial) the job's remaining requests.
        (returned) => {
          const parsed = evaluateJobReply.safeParse(returned);
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
      });
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
