import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";
import { insertAuditEvent, scheduledActorMayRun, type Database } from "@mdp/db";
import {
  createWorker,
  Producer,
  runTestRequest,
  TestSchedules,
  type JobHandler,
  type JobObserver,
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
  /** ROOT_USER_URN: the root user's built-in policy counts when the creator's privileges are read */
  rootUserUrn: string;
}

/** The audit's `via` of what a schedule did, where a request's says how its caller authenticated. */
const VIA = "test-schedule";

/** What runTest with push needs (services/gateway/src/metadata-tests/test-run.service.ts), checked at each firing. */
export const SCHEDULED_TEST_PRIVILEGE = "MANAGE_TESTS";

/**
 * A test's schedule fired: the test's run — runTest with push and the default batch size — created as runTest creates
 * it (TaskLifecycle.create with runTest's own dedup key, so a run still waiting or active, scheduled or not, is joined
 * rather than started twice), audited as `test.run` in the task's transaction, then queued. The run acts for the
 * test's creator (createdBy of the task and the audit row), and only while the creator still holds MANAGE_TESTS, read
 * from PostgreSQL at each firing: otherwise the firing starts nothing, audits `test.run.refused` and logs a warning,
 * and the schedule stays (it runs again once the creator regains the privilege). An INACTIVE test's schedule fires but
 * starts nothing (the schedule pauses with the test); a test deleted or unscheduled meanwhile has its leftover schedule
 * removed.
 */
export function createTestScheduleHandler(deps: TestScheduleDeps): JobHandler<"testSchedule"> {
  return async ({ testUrn }) => {
    const test = await deps.db.prisma.metadataTest.findUnique({
      where: { urn: testUrn },
      select: { urn: true, state: true, createdBy: true, scheduleCron: true },
    });
    if (!test || test.scheduleCron === null) {
      await deps.schedules.setTest(testUrn, null);
      deps.logger.info({ test: testUrn }, "test is gone or unscheduled: removed its schedule");
      return { removedSchedule: true };
    }
    if (test.state === "INACTIVE") return { skipped: "INACTIVE" };
    const actorUrn = test.createdBy;
    const mayRun = await scheduledActorMayRun(deps.db.prisma, {
      actorUrn,
      privilege: SCHEDULED_TEST_PRIVILEGE,
      rootUserUrn: deps.rootUserUrn,
      action: "test.run.refused",
      targetUrn: test.urn,
      via: VIA,
    });
    if (!mayRun) {
      deps.logger.warn(
        { test: test.urn, actor: actorUrn, missingPrivilege: SCHEDULED_TEST_PRIVILEGE },
        "scheduled test run refused: its creator no longer holds the privilege; the schedule stays",
      );
      return { refused: SCHEDULED_TEST_PRIVILEGE };
    }
    const { request, dedupKey } = runTestRequest(test.urn);
    const { taskId, existing } = await deps.tasks.create(
      {
        type: "EVALUATE_TESTS",
        request,
        dedupKey,
        progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
        createdBy: actorUrn,
        what: "a scheduled test run",
        afterInsert: (tx, id) =>
          insertAuditEvent(tx, {
            actorUrn,
            action: "test.run",
            targetUrn: test.urn,
            details: { taskId: id, push: request.push, batchSize: request.batchSize, trigger: "schedule", via: VIA },
          }),
      },
      {
        enqueue: (id) => deps.runs.enqueue(id, { ...request, taskId: id, actorUrn }),
        jobExists: async (id) => Boolean(await deps.runs.queue.getJob(id)),
      },
    );
    deps.logger.info({ test: test.urn, taskId, joined: existing }, "scheduled test run");
    return { taskId, joined: existing };
  };
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
  const reconcile = async () => {
    const tests = await deps.db.prisma.metadataTest.findMany({
      where: { scheduleCron: { not: null } },
      select: { urn: true, scheduleCron: true },
    });
    const { upserted, removed } = await schedules.reconcileTests(
      tests.map((t) => ({ urn: t.urn, cron: t.scheduleCron as string })),
    );
    if (upserted + removed > 0) deps.logger.info({ upserted, removed }, "test schedules reconciled");
  };
  const reconcileLogged = () =>
    reconcile().catch((error: unknown) =>
      deps.logger.warn({ err: (error as Error).message }, "could not reconcile test schedules; trying again later"),
    );
  void reconcileLogged();
  const timer = setInterval(() => void reconcileLogged(), deps.reconcileEveryMs ?? TEST_SCHEDULE_RECONCILE_MS);
  timer.unref();
  void worker.run();
  return {
    worker,
    reconcile,
    stop: async () => {
      clearInterval(timer);
      await worker.close();
      await scheduleQueue.close();
    },
  };
}
