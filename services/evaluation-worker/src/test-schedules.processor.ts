import type { Worker } from "bullmq";
import { AppError, every, type Logger, type Privilege } from "@mdp/core";
import { insertAuditEvent, SCHEDULED_TEST_PRIVILEGE, suspendUnlessOwnerMay, type Database } from "@mdp/db";
import { privilegesOfActions, type ParsedDefinition } from "@mdp/metadata-tests";
import {
  createWorker,
  Producer,
  runTestRequest,
  TestSchedules,
  type JobHandler,
  type JobObserver,
  type RateLimits,
  type RedisConnection,
} from "@mdp/queues";
import type { TaskLifecycle } from "@mdp/tasks";

export interface TestScheduleDeps {
  db: Database;
  tasks: TaskLifecycle;
  /** the evaluate-tests producer: a scheduled run is an ordinary runTest task and job */
  runs: Producer<"evaluate">;
  schedules: TestSchedules;
  logger: Logger;
  /** ROOT_USER_URN: the root user's built-in policy counts when the owner's privileges are read */
  rootUserUrn: string;
  /** the gateway's per-actor limits, on the same Redis keys: each firing is one of its owner's runTest calls */
  rateLimits?: Pick<RateLimits, "consume">;
}

/** The audit's `via` of what a schedule did, where a request's says how its caller authenticated. */
const VIA = "test-schedule";

/** What a scheduled test's firing needs of its owner: runTest's privilege, and what its actions write. */
export function scheduledTestNeeds(definition: unknown): Privilege[] {
  const actions = (definition as Partial<ParsedDefinition> | null)?.actions;
  return [SCHEDULED_TEST_PRIVILEGE, ...privilegesOfActions(actions)];
}

/**
 * A test's schedule fired: the test's run — runTest with push and the default batch size — created as runTest creates
 * it (TaskLifecycle.create with runTest's own dedup key, so a run still waiting or active, scheduled or not, is joined
 * rather than started twice), audited as `test.run` in the task's transaction, then queued. The run acts for the
 * test's owner — whoever last set its definition or schedule — with the owner's privileges read from PostgreSQL at
 * each firing: MANAGE_TESTS and what its actions write. When the owner lacks any, the schedule is suspended
 * (`test.schedule.suspended`, a warning) and this and later firings start nothing until a holder resumes it. Each run
 * counts against the owner's RATE_LIMIT_TEST_RUNS_PER_MINUTE like a runTest call: a firing over it starts nothing and
 * audits `test.run.rateLimited`. An INACTIVE test's schedule fires but starts nothing (the schedule pauses with the
 * test); a test deleted or unscheduled meanwhile has its leftover schedule removed.
 */
export function createTestScheduleHandler(deps: TestScheduleDeps): JobHandler<"testSchedule"> {
  return async ({ testUrn }) => {
    const test = await deps.db.prisma.metadataTest.findUnique({
      where: { urn: testUrn },
      select: {
        urn: true,
        state: true,
        scheduleCron: true,
        ownerUrn: true,
        ownerTokenId: true,
        suspendedAt: true,
        definition: true,
      },
    });
    if (!test || test.scheduleCron === null) {
      await deps.schedules.setTest(testUrn, null);
      deps.logger.info({ test: testUrn }, "test is gone or unscheduled: removed its schedule");
      return { removedSchedule: true };
    }
    // Suspended: nothing starts and nothing is written until someone who may resumes it.
    if (test.suspendedAt !== null) return { skipped: "SUSPENDED" };
    if (test.state === "INACTIVE") return { skipped: "INACTIVE" };
    const ownerUrn = test.ownerUrn;
    const check = await suspendUnlessOwnerMay(deps.db.prisma, {
      work: { kind: "SCHEDULED_TEST", urn: test.urn },
      ownerUrn,
      ownerTokenId: test.ownerTokenId,
      needs: scheduledTestNeeds(test.definition),
      rootUserUrn: deps.rootUserUrn,
      action: "test.schedule.suspended",
      via: VIA,
    });
    if (!check.mayRun) {
      if (check.suspended) {
        deps.logger.warn(
          { test: test.urn, owner: ownerUrn, missingPrivileges: check.missing },
          "scheduled test suspended: its owner no longer holds what it needs",
        );
      }
      return { suspended: check.missing };
    }
    const limited = await overLimit(deps, ownerUrn);
    if (limited) {
      await insertAuditEvent(deps.db.prisma, {
        actorUrn: ownerUrn,
        action: "test.run.rateLimited",
        targetUrn: test.urn,
        details: { ...limited, trigger: "schedule", via: VIA },
      });
      deps.logger.warn({ test: test.urn, owner: ownerUrn, ...limited }, "scheduled test run over its owner's limit");
      return { rateLimited: limited.limit };
    }
    const { request, dedupKey } = runTestRequest(test.urn);
    const { taskId, existing } = await deps.tasks.create(
      {
        type: "EVALUATE_TESTS",
        request,
        dedupKey,
        progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
        createdBy: ownerUrn,
        what: "a scheduled test run",
        afterInsert: (tx, id) =>
          insertAuditEvent(tx, {
            actorUrn: ownerUrn,
            action: "test.run",
            targetUrn: test.urn,
            details: { taskId: id, push: request.push, batchSize: request.batchSize, trigger: "schedule", via: VIA },
          }),
      },
      {
        enqueue: (id) => deps.runs.enqueue(id, { ...request, taskId: id, actorUrn: ownerUrn }),
        jobExists: async (id) => Boolean(await deps.runs.queue.getJob(id)),
      },
    );
    deps.logger.info({ test: test.urn, taskId, joined: existing }, "scheduled test run");
    return { taskId, joined: existing };
  };
}

/** The owner's runTest limit, counted for this firing: what the refusal says when it is spent, else undefined. */
async function overLimit(
  deps: TestScheduleDeps,
  ownerUrn: string,
): Promise<{ limit: string; perMinute: number } | undefined> {
  try {
    await deps.rateLimits?.consume({ urn: ownerUrn }, "testRuns");
    return undefined;
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== "TOO_MANY_REQUESTS") throw error;
    const { limit, perMinute } = error.details as { limit: string; perMinute: number };
    return { limit, perMinute };
  }
}

/** How often each evaluation worker makes the job schedulers match the tests' schedules (and once at start). */
export const TEST_SCHEDULE_RECONCILE_MS = 60_000;

/**
 * The scheduled-test side of an evaluation worker process: a BullMQ worker on `test-schedules` (the schedules' jobs)
 * and the reconciler of the schedulers with the metadata_test rows, at start and every minute, which is what converges
 * a test whose schedule Redis refused when it was written. `stop` closes both (a running job finishes).
 */
export function startTestSchedules(
  deps: Omit<TestScheduleDeps, "schedules"> & {
    connection: RedisConnection;
    producerConnection: RedisConnection;
    prefix: string;
    observer?: JobObserver;
    reconcileEveryMs?: number;
  },
): { worker: Worker; reconcile: () => Promise<void>; stop: () => Promise<void> } {
  const scheduleQueue = new Producer("testSchedule", deps.producerConnection, deps.prefix);
  const schedules = new TestSchedules(scheduleQueue.queue);
  const worker = createWorker("testSchedule", createTestScheduleHandler({ ...deps, schedules }), {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 1,
    logger: deps.logger,
    observer: deps.observer,
  });
  const reconcileCounted = async () => {
    const tests = await deps.db.prisma.metadataTest.findMany({
      where: { scheduleCron: { not: null } },
      select: { urn: true, scheduleCron: true },
    });
    const { upserted, removed } = await schedules.reconcileTests(
      tests.map((t) => ({ urn: t.urn, cron: t.scheduleCron as string })),
    );
    if (upserted + removed > 0) deps.logger.info({ upserted, removed }, "test schedules reconciled");
    return { upserted, removed };
  };
  const reconcile = async () => {
    await reconcileCounted();
  };
  const loop = every(
    "test-schedules-reconcile",
    deps.reconcileEveryMs ?? TEST_SCHEDULE_RECONCILE_MS,
    () =>
      reconcileCounted().catch((error: unknown) => {
        deps.logger.warn({ err: (error as Error).message }, "could not reconcile test schedules; trying again later");
        return undefined;
      }),
    { logger: deps.logger, runAtStart: true },
  );
  void worker.run();
  return {
    worker,
    reconcile,
    stop: async () => {
      await loop.stop();
      await worker.close();
      await scheduleQueue.close();
    },
  };
}
