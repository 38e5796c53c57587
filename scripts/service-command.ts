import path from "node:path";

export type ServiceName = "gateway" | "truncation-worker" | "evaluation-worker" | "webhook-worker";

/**
 * Node flags every service runs with, here and in each service's `start` script. The services allocate a lot of
 * short-lived JSON per request; with V8's default 16 MiB young generation, scavenges took 12–15% of the gateway's CPU
 * under ingestion load; 64 MiB semi-spaces took bench/ingest from 0.46–0.51x to 0.53–0.56x of its baseline.
 * The gateway and the evaluation worker also set their own --heap-growing-percent at start (their main.ts,
 * `setHeapGrowingPercent`): the gateway's old space may grow by half its live set between full collections, so that
 * its RSS stays under the 400 MB of bench/graphql-memory; the worker's by its live set, where V8's own choice (10%)
 * beside these semi-spaces started a full collection every 150–250 ms of a runTest with push.
 */
export const SERVICE_NODE_FLAGS = ["--max-semi-space-size=64"];

/**
 * How a service process loads its TypeScript: scripts/register-ts.cjs, with source maps for stack traces. Benchmarks'
 * helper processes (baselines, floors) load theirs the same way, so they are measured alike.
 */
export function typeScriptLoaderArgs(root: string): string[] {
  return ["--enable-source-maps", "--require", path.join(root, "scripts", "register-ts.cjs")];
}

/** Arguments for `node`: one process per service, no CLI in between, so signals reach the service itself. */
export function serviceNodeArgs(root: string, name: ServiceName, extraFlags: string[] = []): string[] {
  return [
    ...SERVICE_NODE_FLAGS,
    ...extraFlags,
    ...typeScriptLoaderArgs(root),
    path.join(root, "services", name, "src", "main.ts"),
  ];
}

/**
 * The export condition under which the workspace libs resolve to their build (`dist/`) instead of their TypeScript
 * sources (each lib's package.json `exports`). A built service must run with `--conditions=mdp-built`: without it
 * its `require("@mdp/core")` would load a .ts file.
 */
export const BUILT_CONDITION = "mdp-built";

/**
 * Node flags of a service started from its build (`pnpm build`), as each service's `start:prod` script, the
 * Dockerfile and docker-compose.yml spell them: the same flags as from source, no TypeScript loader.
 */
export const BUILT_SERVICE_NODE_FLAGS = [
  ...SERVICE_NODE_FLAGS,
  "--enable-source-maps",
  `--conditions=${BUILT_CONDITION}`,
];

/** Arguments for `node` to run a service from its build in this workspace (test/build/build.spec.ts). */
export function builtServiceNodeArgs(root: string, name: ServiceName, extraFlags: string[] = []): string[] {
  return [...BUILT_SERVICE_NODE_FLAGS, ...extraFlags, path.join(root, "services", name, "dist", "main.js")];
}
