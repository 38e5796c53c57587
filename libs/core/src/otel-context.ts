import { EventEmitter } from "node:events";
import { ROOT_CONTEXT, type Context, type ContextManager } from "@opentelemetry/api";
import { enterScope, runInScope, scopeValue } from "./async-scope";

/** Marks an emitter whose emit already runs in a bound context: the first binding wins, as in OpenTelemetry's. */
const BOUND = Symbol("mdp.otel.boundEmitter");

/**
 * OpenTelemetry's AsyncLocalStorage context manager, binding an event emitter for less. Bound to a context (the http
 * instrumentation binds each request and its response to the request's span), an emitter's listeners must run in that
 * context even when the event comes from elsewhere: a body's later packets are read under the connection's context,
 * not the request's. OpenTelemetry's manager gets there by patching five add- and three remove-listener methods on
 * each emitter, keeping a WeakMap per event name and wrapping every listener added after it (express, body-parser,
 * on-finished, the metrics, the log line each add their own): per request, about twenty closures and a dozen WeakMap
 * entries, which the garbage collector treats as ephemerons. This one wraps the emitter's `emit` once, so that every
 * event it emits, and so every listener, runs in the bound context: the same context reaches the same listeners, and
 * removing a listener needs no lookup of its wrapper.
 *
 * Its context is kept in the process's one async scope (async-scope.ts), beside the log context and the reader, rather
 * than in an AsyncLocalStorage of its own: one store copied into every promise instead of two.
 */
export function leanContextManager(): ContextManager {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { AsyncLocalStorageContextManager } =
    require("@opentelemetry/context-async-hooks") as typeof import("@opentelemetry/context-async-hooks");
  /* eslint-enable @typescript-eslint/no-require-imports */
  class EmitBindingContextManager extends AsyncLocalStorageContextManager {
    override active(): Context {
      return (scopeValue("otel") as Context | undefined) ?? ROOT_CONTEXT;
    }

    override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: Context,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F> {
      const callback = thisArg == null ? fn : (fn.bind(thisArg) as F);
      return runInScope("otel", context, callback, ...args);
    }

    override attach(context: Context): { dispose(): void } {
      const restore = enterScope("otel", context);
      let disposed = false;
      return {
        dispose() {
          if (!disposed) restore();
          disposed = true;
        },
      };
    }

    override bind<T>(context: Context, target: T): T {
      if (!(target instanceof EventEmitter)) return super.bind(context, target);
      const emitter = target as EventEmitter & { [BOUND]?: true };
      if (emitter[BOUND]) return target;
      emitter[BOUND] = true;
      const emit = emitter.emit;
      // eslint-disable-next-line @typescript-eslint/no-this-alias
      const manager = this;
      emitter.emit = function (this: EventEmitter, ...args: Parameters<EventEmitter["emit"]>) {
        return manager.with(context, emit, this, ...args);
      };
      return target;
    }
  }
  return new EmitBindingContextManager();
}
