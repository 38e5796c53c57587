import { runInScope, scopeValue } from "./async-scope";

/** What every log line written while a request or job is being handled says about it (logger.ts's mixin). */
export interface LogContext {
  /** the gateway request's X-Request-Id; in a worker, that of the request that queued the job */
  requestId?: string;
  /** a job that carries several requests (an evaluate batch): their ids */
  requestIds?: readonly string[];
}

/** Runs `fn` with `context` on every log line written inside it (and in what it awaits or schedules). */
export function withLogContext<T>(context: LogContext, fn: () => T): T {
  return runInScope("log", context, fn);
}

/** The context of the request or job being handled, if any: producers read the request id here. */
export function currentLogContext(): LogContext | undefined {
  return scopeValue("log") as LogContext | undefined;
}
