#!/usr/bin/env node
"use strict";
/**
 * The `mdp` command. In the workspace (src/ beside this file and the repository's TypeScript loader above it) it runs
 * the TypeScript sources, so a stale dist/ from an earlier `pnpm build` never answers for the code being edited;
 * installed on its own (`pnpm --filter @mdp/cli pack`, no src/ in the package) it runs the compiled dist/.
 */
const fs = require("node:fs");
const path = require("node:path");

const cliRoot = path.join(__dirname, "..");
const source = path.join(cliRoot, "src", "main.ts");
const loader = path.join(cliRoot, "..", "scripts", "register-ts.cjs");

let entry;
if (fs.existsSync(source) && fs.existsSync(loader)) {
  require(loader);
  entry = require(source);
} else {
  entry = require(path.join(cliRoot, "dist", "main.js"));
}
void entry.main();
