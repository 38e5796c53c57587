/**
 * `pnpm test --find-leaks <paths>` loads this into every jest worker process (NODE_OPTIONS=--require), outside jest's
 * sandbox: it records where each timer, socket and child process was created, and when jest tells the worker to end,
 * writes those still keeping it alive 400 ms later (jest force-exits it at 500 ms, printing "A worker process has
 * failed to exit gracefully") to .data/leaks/<pid>.txt, each with its test file and creation stack. jest's own
 * --detectOpenHandles misses a handle created outside a test's globals (a library's timer, a socket's); this does not.
 * Only workers are watched: give two files or more (one file runs in band, in jest's own process).
 */
"use strict";
const KEY = Symbol.for("mdp.find-leaks");
// jest's worker processes only (jest-worker's processChild.js), not a process a test starts with NODE_OPTIONS inherited
const inJestWorker = /jest-worker[\\/]build[\\/]processChild\.js$/.test(process.argv[1] ?? "");
if (inJestWorker && typeof process.send === "function" && !process[KEY]) {
  process[KEY] = true;
  const { createHook } = require("node:async_hooks");
  const { setTimeout } = require("node:timers");
  const fs = require("node:fs");
  const path = require("node:path");
  // What keeps a process alive: timers and handles (requests and promises end on their own).
  const WATCHED = new Set(["Timeout", "TCPWRAP", "PIPEWRAP", "PROCESSWRAP", "UDPWRAP", "TCPSERVERWRAP", "SIGNALWRAP"]);
  const live = new Map();
  let testFile = "(none yet)";
  createHook({
    init(id, type, _trigger, resource) {
      if (!WATCHED.has(type)) return;
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 30;
      const stack = (new Error().stack ?? "").split("\n").slice(2).join("\n");
      Error.stackTraceLimit = limit;
      live.set(id, { type, testFile, stack, at: Date.now(), resource: new WeakRef(resource) });
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  const keepsAlive = (resource) => {
    if (!resource || resource._destroyed) return false;
    return typeof resource.hasRef === "function" ? resource.hasRef() : true;
  };
  const report = () => {
    // (the worker's own stdout and stderr are pipes, there from its start to its end)
    const left = [...live.values()].filter(
      (entry) => keepsAlive(entry.resource.deref()) && !entry.stack.includes("createWritableStdioStream"),
    );
    if (left.length === 0) return;
    const lines = left.map((entry) => {
      const timer = entry.resource.deref();
      const ms = typeof timer?._idleTimeout === "number" ? ` (${timer._idleTimeout} ms timer)` : "";
      return `${entry.type}${ms}, created ${Date.now() - entry.at} ms ago during ${entry.testFile}\n${entry.stack}\n`;
    });
    const dir = path.join(process.cwd(), ".data", "leaks");
    fs.mkdirSync(dir, { recursive: true });
    const active = JSON.stringify(process.getActiveResourcesInfo());
    fs.writeFileSync(path.join(dir, `${process.pid}.txt`), `still alive (${active}):\n\n${lines.join("\n")}`);
  };
  const onMessage = (message) => {
    // jest-worker's messages: [1 (call), ..., [{path, ...}]] runs a test file; [2 (end)] asks the worker to exit.
    if (Array.isArray(message) && message[0] === 2) {
      process.removeListener("message", onMessage); // a 'message' listener keeps the IPC channel, and the worker, alive
      setTimeout(report, 400).unref();
      return;
    }
    let text;
    try {
      text = JSON.stringify(message);
    } catch {
      return;
    }
    const file = /"path":"([^"]+\.spec\.ts)"/.exec(text ?? "");
    if (file) testFile = file[1];
  };
  process.on("message", onMessage);
}
