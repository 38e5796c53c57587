"use strict";
/**
 * The file piscina loads in each thread of evaluating-worker.ts's pool (IN_THREADS=1): the thread inherits the
 * process's `--require scripts/register-ts.cjs` (spawnBenchProcess), so it can require the TypeScript, as
 * services/evaluation-worker's evaluation-thread.cjs does under `pnpm start`.
 */
module.exports = require("./evaluating-thread.ts");
