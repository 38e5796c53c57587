import { createHash } from "node:crypto";

export const DEFAULT_RUN_BATCH_SIZE = 1000;
export const MAX_RUN_BATCH_SIZE = 10_000;

/** What a runTest task's row records as its request (the runTest payload without its task id and actor). */
export interface RunTestRequest {
  kind: "runTest";
  testUrn: string;
  push: boolean;
  batchSize: number;
}

/**
 * A test run's request and dedup key, one definition for both starters (the gateway's runTest and an evaluation
 * worker's scheduled run): an identical run still waiting or active is joined, so a scheduled run that overlaps the
 * previous one, or a runTest with the same arguments, shares its task.
 */
export function runTestRequest(
  testUrn: string,
  push = true,
  batchSize = DEFAULT_RUN_BATCH_SIZE,
): { request: RunTestRequest; dedupKey: string } {
  const request: RunTestRequest = { kind: "runTest", testUrn, push, batchSize };
  return { request, dedupKey: createHash("sha256").update(JSON.stringify(request)).digest("hex") };
}
