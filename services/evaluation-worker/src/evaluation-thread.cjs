"use strict";
/**
 * The file piscina loads in each evaluation thread (see evaluation-pool.ts). A worker thread starts with a module
 * system of its own: under `pnpm start` it inherits the process's `--require scripts/register-ts.cjs`, but under jest
 * (whose swc transform covers only jest's module registry) nothing compiles TypeScript there, so the thread registers
 * the services' loader itself when it is missing. piscina requires this file and calls its default export.
 */
if (!require.extensions[".ts"]) require("../../../scripts/register-ts.cjs");
module.exports = require("./evaluation-thread.ts");
