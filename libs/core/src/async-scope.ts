import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What a request or job carries through everything it awaits or schedules, in one AsyncLocalStorage: the
 * OpenTelemetry context (otel-context.ts), the log context (log-context.ts) and the reader of read-your-writes
 * (@mdp/db's read-replicas.ts). On Node 20 every AsyncLocalStorage copies its store into every new async resource,
 * each promise included, through its own hook call and its own property on the resource: one storage instead of three
 * makes that one copy. Each slot is set for a callback and what it awaits; the others are kept from the enclosing scope.
 */
class Scope {
  constructor(
    readonly otel: unknown,
    readonly log: unknown,
    readonly reader: unknown,
  ) {}
}

const storage = new AsyncLocalStorage<Scope>();

export type ScopeSlot = "otel" | "log" | "reader";

/** The current value of `slot`, undefined outside any scope that set it. */
export function scopeValue(slot: ScopeSlot): unknown {
  return storage.getStore()?.[slot];
}

/** Runs `fn(...args)` with `slot` set to `value`, the other slots as they are now. */
export function runInScope<A extends unknown[], R>(
  slot: ScopeSlot,
  value: unknown,
  fn: (...args: A) => R,
  ...args: A
): R {
  return storage.run(withSlot(storage.getStore(), slot, value), fn, ...args);
}

/**
 * Sets `slot` for the rest of the current synchronous execution and what it schedules (AsyncLocalStorage.enterWith);
 * the returned function restores what was there before. For OpenTelemetry's `attach` only.
 */
export function enterScope(slot: ScopeSlot, value: unknown): () => void {
  const previous = storage.getStore();
  storage.enterWith(withSlot(previous, slot, value));
  return () => storage.enterWith(previous as Scope);
}

function withSlot(current: Scope | undefined, slot: ScopeSlot, value: unknown): Scope {
  return new Scope(
    slot === "otel" ? value : current?.otel,
    slot === "log" ? value : current?.log,
    slot === "reader" ? value : current?.reader,
  );
}
