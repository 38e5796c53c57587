/**
 * `pnpm build`: compiles every lib and service to CommonJS under its own `dist/` with TypeScript project references
 * (`tsconfig.build.json` at the root lists them; each package's `tsconfig.build.json` says what it depends on), then
 * copies the files the compiled code reads from beside itself:
 *   libs/core/dist/registry/default-entity-registry.yaml   the built-in entity registry (read from __dirname)
 *   libs/db/dist/prisma/migrations/                        what `db:migrate` applies from a build (no repository around it)
 *   services/evaluation-worker/dist/evaluation-thread.cjs  the file piscina loads in each evaluation thread
 * and bundles the one browser page of ours (esbuild): services/gateway/dist/assets/, the GraphQL explorer's script
 * and stylesheet (GraphiQL and React with its page script; services/gateway/src/api-docs/graphql-explorer-bundle.ts).
 * The generated Prisma client (libs/db/src/generated, made by `pnpm install`) is TypeScript and compiles with the rest;
 * its WebAssembly query compiler stays in @prisma/client and is read from node_modules at run time, which is why this
 * is a per-file compile and not a bundle.
 *
 * Every build starts clean (no stale file of a deleted source survives in dist/). Built code resolves the workspace
 * libs to their dist/ only under `node --conditions=mdp-built` (see BUILT_CONDITION in service-command.ts).
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { bundleExplorer } from "../services/gateway/src/api-docs/graphql-explorer-bundle";

const ROOT = path.resolve(__dirname, "..");
const PACKAGES = [
  "libs/core",
  "libs/db",
  "libs/metadata-tests",
  "libs/queues",
  "libs/tasks",
  "libs/schedules",
  "libs/webhooks",
  "services/gateway",
  "services/truncation-worker",
  "services/evaluation-worker",
  "services/webhook-worker",
  "cli",
];

/** Files compiled code reads relative to itself: [source, destination], both from the repository root. */
const ASSETS: Array<[string, string]> = [
  ["libs/core/src/registry/default-entity-registry.yaml", "libs/core/dist/registry/default-entity-registry.yaml"],
  ["prisma/migrations", "libs/db/dist/prisma/migrations"],
  ["services/evaluation-worker/src/evaluation-thread.cjs", "services/evaluation-worker/dist/evaluation-thread.cjs"],
];

async function main(): Promise<void> {
  const started = Date.now();
  if (!existsSync(path.join(ROOT, "libs/db/src/generated/prisma/client.ts"))) {
    throw new Error("the Prisma client is not generated: run `pnpm install` (or `pnpm --filter @mdp/db generate`)");
  }
  for (const pkg of PACKAGES) rmSync(path.join(ROOT, pkg, "dist"), { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-b", "tsconfig.build.json"], {
    cwd: ROOT,
    stdio: "inherit",
  });
  for (const [from, to] of ASSETS) {
    mkdirSync(path.dirname(path.join(ROOT, to)), { recursive: true });
    cpSync(path.join(ROOT, from), path.join(ROOT, to), { recursive: true });
  }
  await bundleExplorer(path.join(ROOT, "services/gateway/dist/assets"));
  process.stdout.write(`built ${PACKAGES.length} packages in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

main().catch((error: unknown) => {
  // tsc has printed its own errors; say nothing more than that it failed.
  const status = (error as { status?: number }).status;
  if (status === undefined)
    process.stderr.write(`pnpm build: ${error instanceof Error ? error.message : String(error)}\n`);
  process.stderr.write("pnpm build failed\n");
  process.exit(1);
});
