import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { compileFunction } from "node:vm";
import type { RE2 as RE2Class } from "re2-wasm";

/**
 * RE2 (re2-wasm) runs every pattern in time linear in the subject, so no pattern a test author writes can hold an
 * event loop the way backtracking `^(a+)+$` does. Its WebAssembly build has a fixed 16 MiB heap, though: a pattern
 * whose program or DFA does not fit aborts the module (a WebAssembly.RuntimeError), after which that instance may
 * answer nothing. So instances are loaded here, not through `require`, and one that aborted is replaced by a fresh
 * one: an oversized pattern costs its own evaluation, not every later one in the process.
 */
export type RE2 = RE2Class;
type RE2Constructor = typeof RE2Class;

const requireHere = createRequire(__filename);
const apiPath = requireHere.resolve("re2-wasm"); // build/src/re2.js, which requires ../wasm/re2
const gluePath = join(dirname(apiPath), "..", "wasm", "re2.js");

let current: { RE2: RE2Constructor; generation: number } | undefined;
let generations = 0;

/** The RE2 class of the live instance, and which instance it is (objects of an aborted one must be dropped). */
export function re2Engine(): { RE2: RE2Constructor; generation: number } {
  current ??= { RE2: loadInstance(), generation: ++generations };
  return current;
}

/** Whether `error` is the engine aborting (out of heap), rather than a pattern's syntax error. */
export function isEngineAbort(error: unknown): boolean {
  // Compared by name, not instanceof: the instance lives in the main realm, which a test sandbox is not.
  return (error as { name?: unknown } | null)?.name === "RuntimeError";
}

/** Drops the instance that aborted; the next re2Engine() call loads a fresh one. */
export function discardEngine(generation: number): void {
  if (current?.generation === generation) current = undefined;
}

/** Evaluates re2-wasm's two CommonJS files afresh, so that each call gets its own WebAssembly instance and heap. */
function loadInstance(): RE2Constructor {
  // A Module object given in advance is how Emscripten takes options: its abort message goes nowhere, not to stderr.
  const emscripten = { print: () => undefined, printErr: () => undefined };
  const glue = runCommonJs(gluePath, createRequire(gluePath), { Module: emscripten });
  const requireForApi = createRequire(apiPath);
  const api = runCommonJs(apiPath, (id: string) => (id === "../wasm/re2" ? glue : requireForApi(id)), {}) as {
    RE2: RE2Constructor;
  };
  return api.RE2;
}

function runCommonJs(path: string, require: (id: string) => unknown, globals: Record<string, unknown>): unknown {
  const module = { exports: {} as unknown };
  const names = ["exports", "require", "module", "__filename", "__dirname", ...Object.keys(globals)];
  const run = compileFunction(readFileSync(path, "utf8"), names, { filename: path });
  run(module.exports, require, module, path, dirname(path), ...Object.values(globals));
  return module.exports;
}
