import path from "node:path";

export type ServiceName = "gateway" | "truncation-worker" | "evaluation-worker";

/**
 * Node flags every service runs with, here and in each service's `start` script. The services allocate a lot of
 * short-lived JSON per request; with V8's default 16 MiB young generation, scavenges took 12–15% of the gateway's CPU
 * under ingestion load; 64 MiB semi-spaces took bench/ingest from 0.46–0.51x to 0.53–0.56x of its baseline.
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
