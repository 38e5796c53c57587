import { createHash } from "node:crypto";
import { AppError } from "@mdp/core";
import { insertAuditEvent } from "@mdp/db";
import { runTestRequest, type Producer, type RateLimits } from "@mdp/queues";
import type { EvaluateDeps } from "./evaluation-deps";
import type { StoredTest } from "./evaluation.store";

/**
 * Starts a test's run (runTest with push and the default batch size) for its owner, as a scheduled firing does,
 * audited as `test.run` with trigger `change`. Its dedup key is runTest's with the definition's hash: a run of the
 * same definition still waiting or active is joined, but a run started before an edit is not (it applies the edit
 * only from its next batch on, so the entities it had evaluated would keep results of the old definition).
 */
export function onChangeRunStarter(
  deps: Pick<EvaluateDeps, "tasks" | "db">,
  producer: Producer<"evaluate">,
  rateLimits?: Pick<RateLimits, "consume">,
): (test: StoredTest) => Promise<void> {
  return async (test) => {
    // Counted as the owner's runTest calls, as a scheduled firing is: edits would otherwise start any number of runs
    // over everything a test selects. Past the limit no run starts (audited); a later edit or runTest catches up.
    try {
      await rateLimits?.consume({ urn: test.ownerUrn }, "testRuns");
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "TOO_MANY_REQUESTS") throw error;
      await insertAuditEvent(deps.db.prisma, {
        actorUrn: test.ownerUrn,
        action: "test.run.rateLimited",
        targetUrn: test.urn,
        details: { trigger: "change", ...(error.details as Record<string, unknown>) },
      });
      return;
    }
    const { request, dedupKey: runTestKey } = runTestRequest(test.urn, { urn: test.ownerUrn });
    const dedupKey = createHash("sha256").update(`${runTestKey}\n${test.hash}`).digest("hex");
    await deps.tasks.create(
      {
        type: "EVALUATE_TESTS",
        request,
        dedupKey,
        progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
        createdBy: test.ownerUrn,
        what: "a test run on its change",
        afterInsert: (tx, id) =>
          insertAuditEvent(tx, {
            actorUrn: test.ownerUrn,
            action: "test.run",
            targetUrn: test.urn,
            details: { taskId: id, push: request.push, batchSize: request.batchSize, trigger: "change" },
          }),
      },
      {
        enqueue: (id) =>
          producer.enqueue(id, {
            ...request,
            taskId: id,
            actorUrn: test.ownerUrn,
          }),
        jobExists: async (id) => Boolean(await producer.getJob(id)),
      },
    );
  };
}
