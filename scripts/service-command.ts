import path from "node:path";

export type ServiceName = "gateway" | "truncation-worker" | "evaluation-worker";

/**
 * Node flags every service runs with, here and in each service's `start` script. The services allocate a lot of
 * short-lived JSON per request; with V8's default 16 MiB young generation, scavenges took 12–15% of the gateway's CPU
 * under ingestion load; 64 MiB semi-spaces took bench/ingest from 0.46–0.51x to 0.53–0.56x of its baseline.
 */
export const SERVICE_NODE_FLAGS = ["--max-semi-space-size=64"];

/** Arguments for `node`: one process per service, no tsx CLI in between, so signals reach the service itself. */
export function serviceNodeArgs(root: string, name: ServiceName, extraFlags: string[] = []): string[] {
  return [...SERVICE_NODE_FLAGS, ...extraFlags, "--import", "tsx", path.join(root, "services", name, "src", "main.ts")];
}
