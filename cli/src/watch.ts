import { InvalidArgumentError } from "commander";
import { Presets, SingleBar } from "cli-progress";
import type { ApiClient } from "./client";
import { CliError, EXIT, type ExitCode } from "./exit-codes";
import { counted, formatCount, formatDuration, printJson } from "./output";
import { ask, InterruptKey, isYes, onTerminal } from "./terminal";
import { describeProgress, describeResult, isFinished, measure, type TaskStatus } from "./task-status";

/** A truncation's pace as the CLI takes it: rethrottleTask's bounds, or `none` to remove the throttle. */
export const PACE_HELP = "rows per second, 1-100000000, or 'none' to remove the throttle";

/** A pace typed by the user: a whole number of rows per second, or null for `none`; undefined when it is neither. */
export function paceOf(text: string): number | null | undefined {
  const value = text.trim().toLowerCase();
  if (value === "none") return null;
  const n = Number(value);
  return /^\d+$/.test(value) && Number.isSafeInteger(n) && n >= 1 && n <= 100_000_000 ? n : undefined;
}

/** paceOf for a command-line argument: a usage error naming it otherwise. */
export function parsePace(what: string, text: string): number | null {
  const pace = paceOf(text);
  if (pace === undefined) throw new InvalidArgumentError(`${what} must be ${PACE_HELP}.`);
  return pace;
}

/** rethrottleTask. */
export function requestRethrottle(
  client: ApiClient,
  taskId: string,
  rowsPerSecond: number | null,
): Promise<TaskStatus> {
  return client.action("/operations?action=rethrottleTask", { taskId, rowsPerSecond });
}

export interface WatchOptions {
  json?: boolean;
  /** how often to ask for the status */
  intervalMs?: number;
}

/** How long the watch rides out an unreachable gateway (a restart, a failover) before giving up with exit 4. */
const OUTAGE_TOLERANCE_MS = 30_000;
/** The window the rate (and so the ETA) is measured over. */
const RATE_WINDOW_MS = 10_000;

/**
 * Follows a task until it ends, then prints how it ended and returns the exit code: 0 completed, 5 failed or
 * cancelled, 130 when the user stopped watching (the task goes on).
 *
 * On a terminal (stdin and stderr, without --json): a live progress bar on stderr with the count, rate and ETA; Ctrl-C
 * asks whether to cancel the task (cancelTask), change a truncation's pace (rethrottleTask) or only stop watching. Otherwise: a status line per change (on stderr
 * with --json, whose stdout holds only the final status), and Ctrl-C stops watching at once.
 */
export async function watchTask(client: ApiClient, taskId: string, options: WatchOptions = {}): Promise<ExitCode> {
  const interactive = onTerminal() && !options.json;
  const intervalMs = options.intervalMs ?? 500;
  const view = interactive ? new ProgressBarView() : new StatusLineView(taskId, options.json ? "stderr" : "stdout");

  let interrupted = false;
  let wake: (() => void) | undefined;
  const onInterrupt = () => {
    interrupted = true;
    wake?.();
  };
  // On a terminal Ctrl-C is a key (InterruptKey: no SIGINT reaches pnpm when run as `pnpm mdp`); a SIGINT sent
  // otherwise (kill -INT, a terminal-less run) still stops the watch.
  const key = interactive ? new InterruptKey(onInterrupt) : undefined;
  process.on("SIGINT", onInterrupt);
  if (interactive) process.stderr.write(`watching task ${taskId} (Ctrl-C: cancel it or stop watching)\n`);
  try {
    key?.resume();
    let status = await poll(client, taskId);
    for (;;) {
      view.update(status);
      if (isFinished(status.state)) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, intervalMs);
      });
      wake = undefined;
      if (interrupted) {
        interrupted = false;
        view.pause();
        key?.pause();
        const choice = interactive ? await askWhatToDo(taskId, status.type === "TRUNCATE_TIMESERIES") : "stop";
        if (choice === "stop") {
          process.stderr.write(`stopped watching; task ${taskId} goes on (mdp tasks watch ${taskId})\n`);
          return EXIT.INTERRUPTED;
        }
        if (choice === "cancel") await requestCancel(client, taskId);
        else await rethrottleWhileWatching(client, taskId, choice.pace);
        // watching again: the next Ctrl-C asks again
        key?.resume();
        view.resume();
      }
      status = await poll(client, taskId);
    }
    view.finish(status);
    if (options.json) printJson(status);
    else process.stdout.write(`${summary(status)}\n`);
    return status.state === "completed" ? EXIT.OK : EXIT.TASK_FAILED;
  } finally {
    view.pause();
    key?.pause();
    process.off("SIGINT", onInterrupt);
  }
}

/** The task's status, riding out a short outage of the gateway. */
async function poll(client: ApiClient, taskId: string): Promise<TaskStatus> {
  const deadline = Date.now() + OUTAGE_TOLERANCE_MS;
  for (;;) {
    try {
      return await client.action("/operations?action=getTaskStatus", { taskId });
    } catch (error) {
      if (!(error instanceof CliError) || error.exitCode !== EXIT.SERVER || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

type Choice = "cancel" | "stop" | { pace: number | null };

/**
 * What the user wants after Ctrl-C: cancel, stop watching, or (a truncation) a new pace typed as a number or `none`.
 * Ctrl-C (or Ctrl-D) at the question stops watching, cancelling nothing.
 */
async function askWhatToDo(taskId: string, paceable: boolean): Promise<Choice> {
  const answer = await ask(
    paceable
      ? `\ncancel task ${taskId}? [y/N, or a pace in rows/s, or 'none' to unthrottle] `
      : `\ncancel task ${taskId}? [y/N] `,
  );
  if (answer === undefined) return "stop";
  if (isYes(answer)) return "cancel";
  const pace = paceable ? paceOf(answer) : undefined;
  return pace === undefined ? "stop" : { pace };
}

async function rethrottleWhileWatching(client: ApiClient, taskId: string, pace: number | null): Promise<void> {
  try {
    const after = await requestRethrottle(client, taskId, pace);
    process.stderr.write(
      after.rowsPerSecond === null
        ? `task ${taskId} unthrottled\n`
        : `task ${taskId} paced at ${formatCount(after.rowsPerSecond)} rows/s\n`,
    );
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`could not change the pace: ${error.message}\n`);
  }
}

async function requestCancel(client: ApiClient, taskId: string): Promise<void> {
  try {
    const after = await client.action("/operations?action=cancelTask", { taskId });
    process.stderr.write(
      after.state === "cancelled"
        ? `task ${taskId} cancelled\n`
        : `cancellation requested: the worker stops task ${taskId} after its current batch\n`,
    );
  } catch (error) {
    // e.g. 409 "Task ... is already completed": say so and keep watching to the end it reached
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`could not cancel: ${error.message}\n`);
  }
}

/** One line saying how the task ended. */
export function summary(status: TaskStatus): string {
  const took =
    status.startedAt !== null && status.finishedAt !== null
      ? ` in ${formatDuration((status.finishedAt - status.startedAt) / 1000)}`
      : "";
  const { done, unit, one, verb } = measure(status);
  switch (status.state) {
    case "completed":
      return `task ${status.taskId} completed${took}: ${describeResult(status) ?? `${counted(done, one, unit)} ${verb}`}`;
    case "failed":
      return `task ${status.taskId} failed${took}: ${status.failedReason ?? "no reason given"}`;
    case "cancelled":
      return `task ${status.taskId} cancelled${took}: ${describeProgress(status)}`;
    case "waiting":
    case "active":
      return `task ${status.taskId} ${status.state}: ${describeProgress(status)}`;
  }
}

interface View {
  update(status: TaskStatus): void;
  finish(status: TaskStatus): void;
  pause(): void;
  resume(): void;
}

/** A status line whenever the state or the count changes. */
class StatusLineView implements View {
  private last = "";
  constructor(
    private readonly taskId: string,
    private readonly stream: "stdout" | "stderr",
  ) {}

  update(status: TaskStatus): void {
    const pace = status.rowsPerSecond === null ? "" : ` (paced at ${formatCount(status.rowsPerSecond)} rows/s)`;
    const line = `task ${this.taskId} ${status.state}${status.cancelRequested ? " (cancel requested)" : ""}: ${describeProgress(status)}${pace}`;
    if (line !== this.last) process[this.stream].write(`${line}\n`);
    this.last = line;
  }
  finish(): void {}
  pause(): void {}
  resume(): void {}
}

/** The bar's ETA: none for a finished task or one being cancelled (it stops at its next checkpoint, not at 100%). */
export function etaOf(status: TaskStatus, rate: number | undefined, remaining: number): string {
  if (isFinished(status.state) || status.cancelRequested) return "-";
  return rate && rate > 0 ? formatDuration(remaining / rate) : "-";
}

/**
 * The bar's rate over its window: none before half a second of samples, nor for a task that had already ended when the
 * watch began (nothing moved while it was watched: "0 rows/s" would read as a stall).
 */
export function rateOf(status: TaskStatus, rate: number | undefined, unit: string): string {
  if (rate === undefined || (rate === 0 && isFinished(status.state))) return "-";
  return `${formatCount(Math.round(rate))} ${unit}/s`;
}

/** cli-progress's bar on stderr, with the rate over the last seconds and the ETA it gives. */
class ProgressBarView implements View {
  private bar: SingleBar | undefined;
  private samples: Array<{ at: number; done: number }> = [];
  private latest: TaskStatus | undefined;

  update(status: TaskStatus): void {
    this.latest = status;
    const { done, total, unit } = measure(status);
    const now = Date.now();
    this.samples.push({ at: now, done });
    while (this.samples.length > 2 && now - this.samples[0]!.at > RATE_WINDOW_MS) this.samples.shift();
    const first = this.samples[0]!;
    const seconds = (now - first.at) / 1000;
    const rate = seconds >= 0.5 ? (done - first.done) / seconds : undefined;
    const remaining = Math.max(total - done, 0);
    const payload = {
      state: status.cancelRequested && !isFinished(status.state) ? "cancelling" : status.state,
      done: formatCount(done),
      all: formatCount(total),
      unit,
      rate: rateOf(status, rate, unit),
      etaText: etaOf(status, rate, remaining),
    };
    // The bar's own value/total drive its fill and percentage: 0 of 0 is shown empty, a finished task full.
    const barTotal = Math.max(total, done, 1);
    const barValue = isFinished(status.state) && status.state === "completed" ? barTotal : Math.min(done, barTotal);
    if (!this.bar) {
      this.bar = new SingleBar(
        {
          format: "{state} |{bar}| {percentage}% | {done}/{all} {unit} | {rate} | ETA {etaText}",
          hideCursor: true,
          clearOnComplete: false,
          stopOnComplete: false,
          barsize: 20,
        },
        Presets.shades_classic,
      );
      this.bar.start(barTotal, barValue, payload);
    } else {
      this.bar.setTotal(barTotal);
      this.bar.update(barValue, payload);
    }
  }

  finish(status: TaskStatus): void {
    this.update(status);
    this.pause();
  }

  pause(): void {
    this.bar?.stop();
    this.bar = undefined;
  }

  resume(): void {
    this.samples = [];
    if (this.latest) this.update(this.latest);
  }
}
