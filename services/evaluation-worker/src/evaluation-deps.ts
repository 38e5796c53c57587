import type { Logger } from "@mdp/core";
import type { OwnerPrivileges } from "@mdp/db";
import type { Database } from "@mdp/db";
import type { JobReply } from "@mdp/queues";
import type { TaskLifecycle } from "@mdp/tasks";
import type { EvaluationPool } from "./evaluation-pool";
import type { EvaluationStore } from "./evaluation.store";
import type { ResultsPusher } from "./results.pusher";
import type { TestRunDiffs } from "./test-run-diff";

/** What the evaluate-tests handlers (evaluate.processor.ts, run-test.processor.ts) are built from. */
export interface EvaluateDeps {
  db: Database;
  store: EvaluationStore;
  /** the threads evaluations run in, under the time and memory limits (EVALUATION_TIME_LIMIT_MS and the others) */
  pool: EvaluationPool;
  pusher: ResultsPusher;
  /** what each run of a test that pushes changed (test_run_diff); absent: no diffs recorded */
  runDiffs?: TestRunDiffs;
  /** what a test's owner may have its actions write now, read afresh (@mdp/db's ownerPrivilegesReader) */
  ownerPrivileges: OwnerPrivileges;
  /**
   * the task lifecycle: test runs' claims, progress and endings under this process's leases, and (`tasks.evaluations`)
   * the rows of synchronous evaluations whose callers got a 504
   */
  tasks: TaskLifecycle;
  /**
   * sends an evaluate job's outcome to the gateway waiting for it (the payload's replyTo); resolves to whether a
   * gateway received it
   */
  reply: (channel: string, reply: JobReply) => Promise<boolean>;
  logger: Logger;
  /** aborted when the process is asked to stop: a test run hands its job back between batches */
  shutdownSignal: AbortSignal;
}
