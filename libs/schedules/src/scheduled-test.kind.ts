import { SCHEDULE_PRIVILEGES, type Privilege } from "@mdp/core";
import { findScheduledTest, insertAuditEvent, listTestSchedules, type ScheduledTestRow } from "@mdp/db";
import { privilegesOfActions, type ParsedDefinition } from "@mdp/metadata-tests";
import { runTestRequest, testScheduleId, TestSchedules } from "@mdp/queues";
import type { ScheduleKind } from "./schedule-kind";

/** What a scheduled test's firing needs of its owner: runTest's privilege, and what its actions write. */
export function scheduledTestNeeds(definition: unknown): Privilege[] {
  const actions = (definition as Partial<ParsedDefinition> | null)?.actions;
  return [SCHEDULE_PRIVILEGES.SCHEDULED_TEST, ...privilegesOfActions(actions)];
}

/**
 * A scheduled test (a metadata_test row with schedule_cron): each firing is the test's run — runTest with push and
 * the default batch size — created as runTest creates it (runTest's own dedup key, so a run still waiting or active,
 * scheduled or not, is joined rather than started twice), audited as `test.run` in the task's transaction, then
 * queued on evaluate-tests. It acts for the test's owner (whoever last set its definition or schedule) and needs
 * MANAGE_TESTS and what its actions write; each firing counts against the owner's RATE_LIMIT_TEST_RUNS_PER_MINUTE
 * like a runTest call (over it: `test.run.rateLimited`). An INACTIVE test's schedule fires but starts nothing (the
 * schedule pauses with the test).
 */
export const scheduledTestKind: ScheduleKind<ScheduledTestRow, "testSchedule"> = {
  name: "scheduledTest",
  label: "scheduled test",
  firingQueue: "testSchedule",
  idOf: (payload) => payload.testUrn,
  schedules: (queue) => new TestSchedules(queue),
  scheduleId: testScheduleId,
  load: findScheduledTest,
  list: async (prisma) => (await listTestSchedules(prisma)).map((t) => ({ id: t.urn, cron: t.cron })),
  cronOf: (row) => row.scheduleCron,
  urnOf: (row) => row.urn,
  work: (row) => ({ kind: "SCHEDULED_TEST", urn: row.urn }),
  needs: (row) => scheduledTestNeeds(row.definition),
  idle: (row) => (row.state === "INACTIVE" ? "INACTIVE" : undefined),
  rateLimit: { limit: "testRuns", action: "test.run.rateLimited" },
  suspendedAction: "test.schedule.suspended",
  missedAction: "test.schedule.missed",
  via: "test-schedule",
  async create(row, urn, deps) {
    const runs = deps.producers.evaluate;
    if (!runs) throw new Error("a scheduled test fired in a process without the evaluate-tests producer");
    const ownerUrn = row.ownerUrn;
    // The owner's run, through no caller's token (its actions are bounded by the token the owner set the test with).
    const { request, dedupKey } = runTestRequest(urn, { urn: ownerUrn });
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
            targetUrn: urn,
            details: {
              taskId: id,
              push: request.push,
              batchSize: request.batchSize,
              trigger: "schedule",
              via: this.via,
            },
          }),
      },
      {
        enqueue: (id) => runs.enqueue(id, { ...request, taskId: id, actorUrn: ownerUrn }),
        jobExists: async (id) => Boolean(await runs.queue.getJob(id)),
      },
    );
    return { taskId, existing };
  },
};
