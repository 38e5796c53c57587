"use strict";
/**
 * The file piscina loads in each evaluation thread (see evaluation-pool.ts). `pnpm build` copies it beside the compiled
 * evaluation-thread.js, which it then loads as plain JavaScript. From the sources, a worker thread starts with a module
 * system of its own: under `pnpm start` it inherits the process's `--require scripts/register-ts.cjs`, but under jest
 * (whose swc transform covers only jest's module registry) nothing compiles TypeScript there, so the thread registers
 * the services' loader itself when it is missing. piscina requires this file and calls its default export.
 */
const { existsSync } = require("node:fs");
const path = require("node:path");

if (existsSync(path.join(__dirname, "evaluation-thread.js"))) {
  module.exports = require("./evaluation-thread.js");
} else {
  if (!require.extensions[".ts"]) require("../../../scripts/register-ts.cjs");
  module.exports = require("./evaluation-thread.ts");
}
