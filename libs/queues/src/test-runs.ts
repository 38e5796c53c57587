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
 * A test run's request and dedup key, one definition for every starter (the gateway's runTest, an evaluation worker's
 * scheduled run and evaluation on change): an identical run still waiting or active **for the same principal** is
 * joined, so a scheduled run that overlaps the previous one, or a runTest with the same arguments by the same caller,
 * shares its task. `by` is whom the run acts for (its actor and the token it called with; a schedule's firing: the
 * owner, no token): a run's pushed actions act with its principal's authority, so another caller's request must not
 * be served by it — a user would otherwise join (or have an owner's firing join) a run acting with other privileges.
 */
export function runTestRequest(
  testUrn: string,
  by: { urn: string; tokenId?: string | null },
  push = true,
  batchSize = DEFAULT_RUN_BATCH_SIZE,
): { request: RunTestRequest; dedupKey: string } {
  const request: RunTestRequest = { kind: "runTest", testUrn, push, batchSize };
  const principal = { actorUrn: by.urn, actorTokenId: by.tokenId ?? null };
  return {
    request,
    dedupKey: createHash("sha256")
      .update(JSON.stringify({ ...request, ...principal }))
      .digest("hex"),
  };
}
