/**
 * Who retention policies and token-set work act for (docs/authorization.md), and the bounds on scheduled work, against
 * the real gateway and the workers' own schedule handlers run in process on real PostgreSQL and Redis: work set
 * through a token another user minted answers to that minter too; a retention policy acts for whoever last changed it;
 * a user owns at most MAX_SCHEDULES_PER_USER schedules; firings spend their owner's runTest budget.
 */
import { ROOT, bearer, createToken, grant, systemClientHeaders } from "./support/gateway-harness";
import {
  OPS,
  CAPPER,
  RUNNER,
  definition,
  TAGGING,
  UPDATE_TEST,
  CREATE_POLICY,
  UPDATE_POLICY,
  POLICY,
  RESUME_POLICY,
  PolicyView,
} from "./support/schedule-ownership";
import { startScheduleOwnershipHarness } from "./support/schedule-ownership-harness";

describe("who scheduled work acts for", () => {
  const sched = startScheduleOwnershipHarness();
  const {
    gql,
    ok,
    grantPolicy,
    revokePolicy,
    createTest,
    viewTest,
    tasksOf,
    audit,
    finishTasks,
    fireTest,
    firePolicy,
  } = sched;

  it("work set through a token another user minted answers to that minter too: the firing suspends when the minter loses what it needs", async () => {
    const MINTER = "urn:li:corpuser:chain-minter";
    const HOLDER = "urn:li:corpuser:chain-holder";
    const minterGrant = await grantPolicy(MINTER, ["MANAGE_ACCESS_TOKENS", "MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    await grantPolicy(HOLDER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    // The minter, through the system client, mints a token for the holder, and sets up a tagging schedule with it.
    const minted = await createToken(sched.gateway, HOLDER, systemClientHeaders(MINTER));
    expect((await createTest("chain-made", "0 3 * * *", bearer(minted.token), TAGGING)).errors).toBeUndefined();
    const testUrn = "urn:li:test:chain-made";
    expect(await viewTest(testUrn)).toMatchObject({ ownerUrn: HOLDER });
    expect(await fireTest(testUrn)).toMatchObject({ taskId: expect.any(String) });

    // The holder still holds everything; the minter no longer does: the token could not, so the work may not.
    await revokePolicy(minterGrant);
    expect(await fireTest(testUrn)).toEqual({ suspended: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"] });
    expect(await viewTest(testUrn)).toMatchObject({ schedule: { suspendedAt: expect.any(Number) } });
  });

  it("a retention policy acts for whoever last changed it, is suspended when they lose it, and a holder resumes it", async () => {
    const opsGrant = await grantPolicy(OPS, ["MANAGE_SYSTEM_OPERATIONS"]);
    const created = await ok<PolicyView>("createRetentionPolicy", CREATE_POLICY, {
      i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *" },
    });
    expect(created).toMatchObject({ createdBy: ROOT, ownerUrn: ROOT, suspendedAt: null });
    const changed = await ok<PolicyView>(
      "updateRetentionPolicy",
      UPDATE_POLICY,
      { u: created.urn, i: { retainDays: 1 } },
      systemClientHeaders(OPS),
    );
    expect(changed).toMatchObject({ createdBy: ROOT, ownerUrn: OPS });

    const fired = await firePolicy(created.urn);
    const task = await sched.gateway.prisma.task.findUnique({ where: { id: fired.taskId as string } });
    expect(task).toMatchObject({ createdBy: OPS, type: "TRUNCATE_TIMESERIES" });
    const runRows = await sched.gateway.prisma.auditEvent.findMany({
      where: { details: { path: ["taskId"], equals: fired.taskId as string } },
    });
    expect(runRows.map((r) => [r.action, r.actorUrn])).toEqual([
      ["timeseries.truncate", OPS],
      ["retentionPolicy.run", OPS],
    ]);
    await finishTasks();

    await revokePolicy(opsGrant);
    expect(await firePolicy(created.urn)).toEqual({ suspended: ["MANAGE_SYSTEM_OPERATIONS"] });
    expect(await ok<PolicyView>("retentionPolicy", POLICY, { u: created.urn })).toMatchObject({
      ownerUrn: OPS,
      suspendedAt: expect.any(Number),
      suspendedReason: expect.stringContaining("MANAGE_SYSTEM_OPERATIONS"),
    });
    expect(await audit("retentionPolicy.suspended", created.urn)).toEqual([
      expect.objectContaining({
        actorUrn: OPS,
        details: { missingPrivileges: ["MANAGE_SYSTEM_OPERATIONS"], trigger: "schedule", via: "retention-schedule" },
      }),
    ]);
    expect(await firePolicy(created.urn)).toEqual({ skipped: "SUSPENDED" });
    expect(await sched.gateway.prisma.task.count({ where: { state: "waiting" } })).toBe(0);

    const byOps = await gql(RESUME_POLICY, { u: created.urn }, systemClientHeaders(OPS));
    expect(byOps.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const resumed = await ok<PolicyView>("resumeRetentionPolicy", RESUME_POLICY, { u: created.urn });
    expect(resumed).toMatchObject({ ownerUrn: ROOT, suspendedAt: null, suspendedReason: null });
    expect(await audit("retentionPolicy.resume", created.urn)).toEqual([
      expect.objectContaining({ actorUrn: ROOT, details: expect.objectContaining({ previousOwner: OPS }) }),
    ]);
    const after = await firePolicy(created.urn);
    expect(await sched.gateway.prisma.task.findUnique({ where: { id: after.taskId as string } })).toMatchObject({
      createdBy: ROOT,
    });
    await finishTasks();
    await ok("deleteRetentionPolicy", `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, { u: created.urn });
  });

  it("refuses a user's 21st schedule naming MAX_SCHEDULES_PER_USER, even when two race for the last place", async () => {
    await grant(sched.gateway, CAPPER, ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS"]);
    const as = systemClientHeaders(CAPPER);
    for (let i = 0; i < 19; i++) {
      const body = await createTest(`capped-${i}`, "0 4 * * *", as);
      expect(body.errors).toBeUndefined();
    }
    // Two creations racing for the 20th place: exactly one takes it.
    const raced = await Promise.all([createTest("capped-a", "0 4 * * *", as), createTest("capped-b", "0 4 * * *", as)]);
    expect(raced.filter((b) => b.errors === undefined)).toHaveLength(1);
    const refused = raced.find((b) => b.errors)!;
    expect(refused.errors?.[0]?.extensions?.code).toBe("CONFLICT");
    expect(refused.errors?.[0]?.message).toContain(
      "already owns 20 schedules (scheduled tests and retention policies), the limit of 20 (MAX_SCHEDULES_PER_USER)",
    );
    // A retention policy counts too; an unscheduled test is no schedule.
    const policy = await gql(
      CREATE_POLICY,
      { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 3, cron: "0 5 * * *" } },
      as,
    );
    expect(policy.errors?.[0]?.message).toContain("MAX_SCHEDULES_PER_USER");
    expect((await createTest("capped-unscheduled", null, as)).errors).toBeUndefined();
    // Scheduling it, or taking over someone else's schedule, would be the 21st.
    const scheduling = await gql(
      UPDATE_TEST,
      {
        urn: "urn:li:test:capped-unscheduled",
        input: {
          name: "u",
          category: "Ownership",
          definition: { json: definition() },
          schedule: { cron: "0 6 * * *" },
        },
      },
      as,
    );
    expect(scheduling.errors?.[0]?.message).toContain("MAX_SCHEDULES_PER_USER");
    expect(
      await sched.gateway.prisma.metadataTest.count({ where: { ownerUrn: CAPPER, scheduleCron: { not: null } } }),
    ).toBe(20);
  });

  it("counts each firing against its owner's runTest limit: with the budget spent, a firing starts nothing", async () => {
    await grant(sched.gateway, RUNNER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const runner = await createToken(sched.gateway, RUNNER);
    expect((await createTest("runner-scheduled", "0 7 * * *", bearer(runner.token))).errors).toBeUndefined();
    expect((await createTest("runner-manual", null, bearer(runner.token))).errors).toBeUndefined();
    // The owner's own runTest calls spend the minute's budget (RATE_LIMIT_TEST_RUNS_PER_MINUTE, 10)...
    for (let i = 0; i < sched.gateway.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE; i++) {
      const body = await gql(`mutation { runTest(urn: "urn:li:test:runner-manual") }`, {}, bearer(runner.token));
      expect(body.errors).toBeUndefined();
    }
    // ...so the schedule's firing is refused like an eleventh call: no task, one audit row.
    expect(await fireTest("urn:li:test:runner-scheduled")).toEqual({
      rateLimited: "RATE_LIMIT_TEST_RUNS_PER_MINUTE",
    });
    expect(await tasksOf("urn:li:test:runner-scheduled")).toEqual([]);
    expect(await audit("test.run.rateLimited", "urn:li:test:runner-scheduled")).toEqual([
      expect.objectContaining({
        actorUrn: RUNNER,
        details: { limit: "RATE_LIMIT_TEST_RUNS_PER_MINUTE", perMinute: 10, trigger: "schedule", via: "test-schedule" },
      }),
    ]);
    // The manual runs were made through the token: their task says so.
    expect((await tasksOf("urn:li:test:runner-manual"))[0]).toMatchObject({ created_via: runner.id });
    await finishTasks();
  });

  it("spends the owner's runTest budget with its firings: the owner's next runTest is refused", async () => {
    const FIRER = "urn:li:corpuser:firer";
    await grant(sched.gateway, FIRER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const firer = await createToken(sched.gateway, FIRER);
    expect((await createTest("firer-scheduled", "0 8 * * *", bearer(firer.token))).errors).toBeUndefined();
    for (let i = 0; i < sched.gateway.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE; i++) {
      expect(await fireTest("urn:li:test:firer-scheduled")).toHaveProperty("taskId");
    }
    const refused = await gql(`mutation { runTest(urn: "urn:li:test:firer-scheduled") }`, {}, bearer(firer.token));
    expect(refused.errors?.[0]?.extensions?.code).toBe("TOO_MANY_REQUESTS");
    await finishTasks();
  });
});
