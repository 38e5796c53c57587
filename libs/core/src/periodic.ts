import type { Logger } from "./logger";

/** What a run may say it did (`{ deleted: 3 }`): logged at debug with the loop's name. Nothing: nothing is logged. */
export type RunSummary = Record<string, unknown> | undefined | void;

export interface EveryOptions {
  /** where a failing run, and at debug what a run did, are logged (with `loop`: the loop's name) */
  logger: Logger;
  /** let the process exit while the loop waits (true by default: a per-process chore never keeps a process up) */
  unref?: boolean;
  /** run once at once (synchronously up to fn's first await), then every `ms` */
  runAtStart?: boolean;
}

export interface PeriodicLoop {
  /** No run starts after it; resolves once the run in flight, if any, has ended. Calling it again is harmless. */
  stop(): Promise<void>;
}

/**
 * A per-process loop (heartbeats, lease renewals, a replica's share of a chore): runs `fn` every `ms`.
 * - Runs never overlap: a tick that comes while a run is still going is skipped, so a slow run (PostgreSQL or Redis
 *   stalled) delays the next rather than piling runs up behind it.
 * - A run that throws is logged at warn with the loop's name, and the loop goes on.
 * - A run that returns a summary (`{ renewed: 2 }`) has it logged at debug with the loop's name.
 * - `stop()` clears the timer and waits for the run in flight.
 * Cluster-wide schedules are BullMQ job schedulers, not this.
 */
export function every(
  name: string,
  ms: number,
  fn: () => RunSummary | Promise<RunSummary>,
  options: EveryOptions,
): PeriodicLoop {
  const { logger, unref = true, runAtStart = false } = options;
  let inFlight: Promise<void> | undefined;
  let stopped = false;

  const run = async (): Promise<void> => {
    try {
      const summary = await fn();
      if (summary !== undefined) logger.debug({ loop: name, ...summary }, `${name}: ran`);
    } catch (error) {
      logger.warn({ err: error, loop: name }, `${name}: a run failed; the loop goes on`);
    }
  };
  const tick = (): void => {
    if (stopped || inFlight) return; // one run at a time: a slow run skips ticks
    inFlight = run().finally(() => (inFlight = undefined));
  };

  const timer = setInterval(tick, ms);
  if (unref) timer.unref();
  if (runAtStart) tick();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** What one pass of an outbox consumer did: how many events it read (0: nothing new). */
export interface OutboxPass {
  events: number;
}

export interface OutboxLoopOptions {
  /**
   * While passes keep finding events (and for a second after the last that did), look again this soon (ms) rather
   * than every `pollMs`: a stream's events then wait about this long, an idle outbox still costs one look per
   * `pollMs`. Unset: every `pollMs` always (evaluation on change, whose poll is its coalescing window).
   */
  followMs?: number;
}

/** How long after a pass last found events a following loop keeps looking every `followMs`. */
export const OUTBOX_FOLLOW_WINDOW_MS = 1_000;

/**
 * Each worker process's share of one consumer of the platform-event outbox (evaluation on change, the webhooks'
 * fan-out): a pass, drained until caught up, every `pollMs` (`followMs` after the last while this worker's passes keep
 * finding events); whichever worker holds the consumer's cursor does the work, the others find it locked (their drain
 * answers null, which also ends following) and wait for their next look.
 * Looks never overlap. A failing pass (the database or Redis away) is logged at warn and redone from the same cursor
 * after a wait that doubles up to 30 s, so an outage costs retries, not a storm of them.
 */
export function outboxConsumerLoop<P extends OutboxPass>(
  name: string,
  drain: () => Promise<P | null | undefined>,
  pollMs: number,
  logger: Logger,
  options: OutboxLoopOptions = {},
): PeriodicLoop {
  const followMs = Math.max(1, Math.min(options.followMs ?? pollMs, pollMs));
  let failures = 0;
  let followUntil = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;

  const look = async (): Promise<number> => {
    const started = Date.now();
    try {
      const done = await drain();
      failures = 0;
      // Another worker holds the cursor: this one stops following (its looks would only contend for the lock).
      if (!done) followUntil = 0;
      else if (done.events > 0) {
        followUntil = Date.now() + OUTBOX_FOLLOW_WINDOW_MS;
        logger.debug({ loop: name, ...(done as Record<string, unknown>) }, `${name}: ran`);
      }
      // Not following: one look per pollMs from the start of the last, as a fixed-rate tick would.
      return Date.now() < followUntil ? followMs : Math.max(0, started + pollMs - Date.now());
    } catch (error) {
      failures++;
      logger.warn({ err: error, loop: name }, `${name}: a run failed; the loop goes on`);
      return Math.min(30_000, pollMs * 2 ** Math.min(failures, 10));
    }
  };
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      // look() logs its own failures; a logger that throws still leaves the loop going.
      inFlight = look().then(schedule, () => schedule(pollMs));
      void inFlight.finally(() => (inFlight = undefined));
    }, ms);
    timer.unref();
  };
  schedule(pollMs);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
