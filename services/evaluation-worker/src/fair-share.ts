/**
 * Fairness between callers in one evaluation worker. With a first-come queue, one caller who kept more slow (but
 * legal) evaluations in flight than there are threads held every thread and every job slot: another caller's 10 ms
 * evaluation waited for one of them to reach the time limit (10 s). Two shares bound that:
 *
 * - ThreadShare: an actor holds at most `perActor` of the pool's threads at once, and waiting tasks are dispatched
 *   round-robin across actors, so one actor's backlog never sits in front of another actor's request.
 * - JobShare: the worker's last free job slot (EVALUATION_CONCURRENCY) goes only to a job with an actor who holds no
 *   other job here; a job of actors who all do is handed back to the queue (after HAND_BACK_MS), so a slot keeps
 *   coming free for newcomers while one actor's jobs wait for its threads.
 *
 * An actor is the user a request acts for (the system client acting for a user counts as that user).
 */

import { KeyedSlots, perKeyConcurrency, type JobHandler, type Payload } from "@mdp/queues";

/** How long a job handed back by JobShare waits before it is fetched again: bounds how often it bounces. */
export const HAND_BACK_MS = 25;

/** Thrown when more tasks wait for a thread than the pool holds (a bug or a misconfiguration; the job retries). */
export class PoolQueueFullError extends Error {
  override readonly name = "PoolQueueFullError";
}

/**
 * Tasks started through `run`: at most one per thread that is ready (setThreads), at most `perActor` threads held by
 * one actor at once, round-robin across actors. A thread stopped at a limit is replaced, and the replacement takes
 * hundreds of ms to load: until one is ready, the stopped thread still counts as held by the actor whose task it ran,
 * so an actor whose tasks keep being stopped cannot take the threads that stay ready from the others.
 */
export class ThreadShare {
  /** threads ready to take a task */
  private threads = 0;
  /** tasks on threads */
  private running = 0;
  /** threads each actor holds: its running tasks and its stopped threads not yet replaced */
  private readonly heldBy = new Map<string, number>();
  /** the actors of stopped threads, oldest first, each released when a replacement is ready */
  private readonly replacing: string[] = [];
  /**
   * each actor's waiting tasks, for the actors with tasks waiting or threads held, in the order of the round: the next
   * thread goes to the first actor after the one served last that may take it
   */
  private readonly waiting = new Map<string, Array<() => void>>();
  private waitingCount = 0;
  private servedLast: string | undefined;

  constructor(
    private readonly perActor: number,
    private readonly maxWaiting: number,
  ) {}

  /** The threads ready now; `replacement`: the one that just became ready replaces a thread stopped at a limit. */
  setThreads(threads: number, replacement: boolean): void {
    this.threads = threads;
    const actor = replacement ? this.replacing.shift() : undefined;
    if (actor !== undefined) this.release(actor);
    this.dispatch();
  }

  /**
   * Starts `start` once a thread is free for `actor`; settles as the promise it returns does. `stopped`: whether a
   * result means its thread was stopped (and is being replaced).
   */
  run<T>(actor: string, start: () => Promise<T>, stopped: (result: T) => boolean = () => false): Promise<T> {
    if (this.waitingCount >= this.maxWaiting) {
      return Promise.reject(new PoolQueueFullError(`${this.waitingCount} evaluation tasks already wait for a thread`));
    }
    return new Promise<T>((resolve, reject) => {
      const go = () => {
        this.running++;
        this.heldBy.set(actor, (this.heldBy.get(actor) ?? 0) + 1);
        let started: Promise<T>;
        try {
          started = start();
        } catch (error) {
          started = Promise.reject(error);
        }
        let replaced = false;
        void started
          .then((result) => {
            replaced = stopped(result);
            resolve(result);
          }, reject)
          .finally(() => {
            this.running--;
            if (replaced) this.replacing.push(actor);
            else this.release(actor);
            this.dispatch();
          });
      };
      const queue = this.waiting.get(actor);
      if (queue) queue.push(go);
      else this.waiting.set(actor, [go]);
      this.waitingCount++;
      this.dispatch();
    });
  }

  private release(actor: string): void {
    const left = (this.heldBy.get(actor) ?? 1) - 1;
    if (left > 0) {
      this.heldBy.set(actor, left);
      return;
    }
    this.heldBy.delete(actor);
    if (this.waiting.get(actor)?.length === 0) this.waiting.delete(actor);
  }

  private dispatch(): void {
    while (this.running < this.threads) {
      const actors = [...this.waiting.keys()];
      const from = this.servedLast === undefined ? 0 : actors.indexOf(this.servedLast) + 1;
      let actor: string | undefined;
      for (let i = 0; i < actors.length && actor === undefined; i++) {
        const candidate = actors[(from + i) % actors.length]!;
        if (this.waiting.get(candidate)!.length > 0 && (this.heldBy.get(candidate) ?? 0) < this.perActor) {
          actor = candidate;
        }
      }
      if (actor === undefined) return;
      const next = this.waiting.get(actor)!.shift()!;
      this.servedLast = actor;
      this.waitingCount--;
      next();
    }
  }
}

/**
 * The worker's job slots by actor (see the file's comment): @mdp/queues' per-key counts, with the last-slot rule as
 * the cap per actor.
 */
export class JobShare extends KeyedSlots {
  constructor(readonly slots: number) {
    super();
  }

  /** The jobs one actor may hold, `held` slots being taken: any number, but at the last free slot only a first. */
  capWhen(held: number): number {
    return this.slots > 1 && held + 1 >= this.slots ? 1 : Infinity;
  }
}

/**
 * The evaluate-tests handler behind the worker's JobShare: a job that may not take the last free slot goes back to the
 * queue (after HAND_BACK_MS; BullMQ counts no attempt for it). Test runs count as one actor (""), so background runs
 * never take the last slot either.
 */
export function withJobShare(handler: JobHandler<"evaluate">, share: JobShare): JobHandler<"evaluate"> {
  return perKeyConcurrency(handler, actorsOf, (held) => share.capWhen(held), {
    slots: share,
    handBackMs: HAND_BACK_MS,
  });
}

function actorsOf(payload: Payload<"evaluate">): string[] {
  return payload.kind === "runTest"
    ? [""]
    : payload.kind === "previewTest"
      ? [payload.actorUrn]
      : payload.items.map((i) => i.actorUrn);
}
