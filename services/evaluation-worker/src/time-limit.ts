import vm from "node:vm";

/** Evaluation was stopped at its time limit (see runWithin). */
export class TimeLimitError extends Error {
  override readonly name = "TimeLimitError";
}

const context = vm.createContext({});
const callRun = new vm.Script("run()");

/**
 * Runs the synchronous `work` and stops it after `limitMs`. Metadata tests are evaluated synchronously, and a
 * regex_match pattern that backtracks catastrophically on an entity's values (`^(a+)+$` against thirty a's and a
 * "!") would otherwise hold the worker's event loop for minutes or for good: every job on it waits, its BullMQ locks
 * lapse, and the job it stalled goes to the next worker to block that one too. JavaScript cannot interrupt a RegExp,
 * but V8 can, from node:vm's watchdog: `work` runs as a vm script's callee, under the script's timeout. That costs
 * about 0.1 ms a call, so it wraps a job's or a batch's evaluation, not each test.
 */
export function runWithin<T>(
  limitMs: number,
  work: () => T,
  /** how the limit is named in the error: the configured one by default */
  limitText = `${limitMs} ms (EVALUATION_TIME_LIMIT_MS)`,
): T {
  (context as { run?: () => T }).run = work;
  try {
    return callRun.runInContext(context, { timeout: limitMs }) as T;
  } catch (error) {
    if ((error as { code?: string } | null)?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      throw new TimeLimitError(
        `Evaluation stopped after ${limitText}. A test's regex_match pattern that ` +
          `backtracks catastrophically on the entity's values is the likely cause (a nested quantifier such as ` +
          `(a+)+); rewrite or deactivate that test.`,
      );
    }
    throw error;
  } finally {
    delete (context as { run?: () => T }).run;
  }
}
