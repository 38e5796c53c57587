"use strict";
/**
 * How the services run their TypeScript: `node --require ./scripts/register-ts.cjs src/main.ts`. Each .ts file is
 * compiled to CommonJS by esbuild as it is first required, with an inline source map (run with --enable-source-maps so
 * stack traces name the .ts lines). Unlike tsx, which the tooling (tests, scripts, benchmarks' own processes) keeps
 * using, this adds nothing at run time: no module-resolution hooks consulted on every require (Apollo requires a
 * built-in module per request), and no esbuild `keepNames`, which wraps every function created at run time in a call
 * that redefines its name (a sixth of the time of a metadata-test evaluation).
 */
const fs = require("node:fs");
const Module = require("node:module");
const esbuild = require("esbuild");

Module._extensions[".ts"] = function compileTypeScript(module, filename) {
  const { code } = esbuild.transformSync(fs.readFileSync(filename, "utf8"), {
    loader: "ts",
    format: "cjs",
    target: `node${process.versions.node.split(".")[0]}`,
    sourcefile: filename,
    sourcemap: "inline",
  });
  module._compile(code, filename);
};

// TypeScript sources import each other with .js extensions (the generated Prisma client does): a relative .js that
// does not exist is looked for as .ts.
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveTypeScript(request, parent, ...rest) {
  try {
    return resolveFilename.call(this, request, parent, ...rest);
  } catch (error) {
    if (request.startsWith(".") && request.endsWith(".js")) {
      return resolveFilename.call(this, `${request.slice(0, -3)}.ts`, parent, ...rest);
    }
    throw error;
  }
};
