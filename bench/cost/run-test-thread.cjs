"use strict";
/** The file piscina loads in each thread of run-test-floor.ts's pool (IN_THREADS=1), as evaluating-thread.cjs does. */
module.exports = require("./run-test-thread.ts");
