/**
 * Who a scheduled test acts for (docs/authorization.md), against the real gateway and the workers' own schedule handlers
 * run in process on real PostgreSQL and Redis: the principal who last set what it does owns it, its firings act for
 * that owner (task and audit rows name it, not the creator), and are suspended (visibly, audited, resumable by a
 * holder) once the owner lacks what they need; what a schedule needs is checked against the request's own privileges;
 * another caller's runTest is a run of its own; setting a test ACTIVE or evaluating on change takes it over.
 */
import { ROOT, bearer, createToken, grant, systemClientHeaders, type GraphQLBody } from "./support/gateway-harness";
import {
  EDITOR,
  OTHER_MANAGER,
  NOBODY,
  definition,
  TAGGING,
  OWNING,
  CREATE_TEST,
  UPDATE_TEST,
  RESUME_TEST,
} from "./support/schedule-ownership";
import { startScheduleOwnershipHarness } from "./support/schedule-ownership-harness";

describe("who scheduled work acts for", () => {
  const sched = startScheduleOwnershipHarness();
  const { gql, ok, grantPolicy, revokePolicy, createTest, viewTest, tasksOf, audit, finishTasks, fireTest } = sched;

  it("a scheduled test acts for whoever last set what it does, is suspended when they lose it, and a holder resumes it", async () => {
    const testUrn = "urn:li:test:root-made";
    expect((await createTest("root-made", "0 3 * * *", systemClientHeaders(ROOT))).errors).toBeUndefined();
    const editorGrant = await grantPolicy(EDITOR, [
      "MANAGE_TESTS",
      "EDIT_ENTITY_TAGS",
      "GENERATE_PERSONAL_ACCESS_TOKENS",
    ]);
    const editorToken = await createToken(sched.gateway, EDITOR);

    // A rename changes what the test does in nothing: the root user still owns it.
    const renamed = await gql(
      UPDATE_TEST,
      { urn: testUrn, input: { name: "renamed", category: "Ownership", definition: { json: definition() } } },
      bearer(editorToken.token),
    );
    expect(renamed.errors).toBeUndefined();
    expect(await viewTest(testUrn)).toMatchObject({ ownerUrn: ROOT });

    // Actions the editor may not write are refused, naming the privilege, and change nothing.
    const owning = await gql(
      UPDATE_TEST,
      {
        urn: testUrn,
        input: {
          name: "renamed",
          category: "Ownership",
          definition: { json: definition(OWNING) },
          schedule: { cron: "*/2 * * * * *" },
        },
      },
      bearer(editorToken.token),
    );
    expect(owning.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(owning.errors?.[0]?.message).toContain("EDIT_ENTITY_OWNERS");
    expect(await viewTest(testUrn)).toMatchObject({ ownerUrn: ROOT, schedule: { cron: "0 3 * * *" } });

    // The editor sets a frequent schedule and tagging actions: it owns the test from then on.
    const edited = await gql(
      UPDATE_TEST,
      {
        urn: testUrn,
        input: {
          name: "renamed",
          category: "Ownership",
          definition: { json: definition(TAGGING) },
          schedule: { cron: "*/2 * * * * *" },
        },
      },
      bearer(editorToken.token),
    );
    expect(edited.errors).toBeUndefined();
    expect(await viewTest(testUrn)).toEqual({
      ownerUrn: EDITOR,
      createdBy: ROOT,
      schedule: { cron: "*/2 * * * * *", suspendedAt: null, suspendedReason: null },
    });
    expect(await sched.gateway.prisma.metadataTest.findUnique({ where: { urn: testUrn } })).toMatchObject({
      ownerTokenId: editorToken.id,
    });

    // The firing acts for the editor, not the root user: the task and its audit row name the editor.
    const fired = await fireTest(testUrn);
    expect(fired).toMatchObject({ taskId: expect.any(String), joined: false });
    expect(await tasksOf(testUrn)).toEqual([
      { id: fired.taskId, created_by: EDITOR, created_via: null, state: "waiting" },
    ]);
    expect(await audit("test.run", testUrn)).toEqual([
      expect.objectContaining({ actorUrn: EDITOR, details: expect.objectContaining({ via: "test-schedule" }) }),
    ]);
    const job = await sched.runs.queue.getJob(fired.taskId as string);
    expect(job?.data).toMatchObject({ actorUrn: EDITOR });
    await finishTasks();

    // The editor loses MANAGE_TESTS: the next firing suspends the schedule, audited, visible in the Test.
    await revokePolicy(editorGrant);
    await grantPolicy(EDITOR, ["EDIT_ENTITY_TAGS"]);
    expect(await fireTest(testUrn)).toEqual({ suspended: ["MANAGE_TESTS"] });
    const suspended = await viewTest(testUrn);
    expect(suspended.schedule).toMatchObject({
      suspendedAt: expect.any(Number),
      suspendedReason: expect.stringContaining("no longer holds MANAGE_TESTS"),
    });
    expect(await audit("test.schedule.suspended", testUrn)).toEqual([
      expect.objectContaining({
        actorUrn: EDITOR,
        details: { missingPrivileges: ["MANAGE_TESTS"], trigger: "schedule", via: "test-schedule" },
      }),
    ]);
    // Later firings start nothing and write nothing.
    expect(await fireTest(testUrn)).toEqual({ skipped: "SUSPENDED" });
    expect(await audit("test.schedule.suspended", testUrn)).toHaveLength(1);
    expect((await tasksOf(testUrn)).filter((t) => t.state === "waiting")).toEqual([]);

    // Resuming needs what the runs need: nothing for a caller without MANAGE_TESTS, nor without the actions' privilege.
    const byNobody = await gql(RESUME_TEST, { urn: testUrn }, systemClientHeaders(NOBODY));
    expect(byNobody.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const byManager = await gql(RESUME_TEST, { urn: testUrn }, systemClientHeaders(OTHER_MANAGER));
    expect(byManager.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(byManager.errors?.[0]?.message).toContain("EDIT_ENTITY_TAGS");
    // A holder resumes it and owns it; the next firing acts for the resumer.
    expect(await ok("resumeTestSchedule", RESUME_TEST, { urn: testUrn })).toBe(testUrn);
    expect(await viewTest(testUrn)).toMatchObject({ ownerUrn: ROOT, schedule: { suspendedAt: null } });
    expect(await audit("test.schedule.resume", testUrn)).toEqual([
      expect.objectContaining({ actorUrn: ROOT, details: expect.objectContaining({ previousOwner: EDITOR }) }),
    ]);
    const again = await fireTest(testUrn);
    expect((await tasksOf(testUrn)).find((t) => t.id === again.taskId)).toMatchObject({ created_by: ROOT });
    const notSuspended = await gql(RESUME_TEST, { urn: testUrn });
    expect(notSuspended.errors?.[0]?.extensions?.code).toBe("CONFLICT");
    await finishTasks();
  });

  it("checks what a schedule needs against the request's own privileges: a scoped token's scopes leave it out", async () => {
    const SCOPED = "urn:li:corpuser:scoped-scheduler";
    await grant(sched.gateway, SCOPED, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    const scoped = await createToken(sched.gateway, SCOPED, systemClientHeaders(ROOT), { scopes: ["MANAGE_TESTS"] });
    const refused = await createTest("scoped-tagging", "0 11 * * *", bearer(scoped.token), TAGGING);
    expect(refused.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(refused.errors?.[0]?.message).toContain("need EDIT_ENTITY_TAGS");
    expect(
      await sched.gateway.prisma.metadataTest.findUnique({ where: { urn: "urn:li:test:scoped-tagging" } }),
    ).toBeNull();
    // Without actions, MANAGE_TESTS (within the scopes) is all its runs need.
    expect((await createTest("scoped-plain", "0 11 * * *", bearer(scoped.token))).errors).toBeUndefined();
  });

  it("runs another caller's runTest as a run of its own: it neither joins the owner's run nor has a firing join it", async () => {
    const JOINER = "urn:li:corpuser:joiner";
    await grant(sched.gateway, JOINER, ["MANAGE_TESTS"]);
    const testUrn = "urn:li:test:shared-run";
    expect((await createTest("shared-run", "0 12 * * *", systemClientHeaders(ROOT))).errors).toBeUndefined();
    const run = () => ok<string>("runTest", `mutation { runTest(urn: "${testUrn}") }`, {}, systemClientHeaders(JOINER));

    // The owner's firing is waiting: the other caller's runTest starts its own run, acting for it.
    const fired = await fireTest(testUrn);
    const mine = await run();
    expect(mine).not.toBe(fired.taskId);
    expect(await run()).toBe(mine); // its own identical request still joins its own run
    expect(await tasksOf(testUrn)).toEqual([
      expect.objectContaining({ id: fired.taskId, created_by: ROOT, state: "waiting" }),
      expect.objectContaining({ id: mine, created_by: JOINER, state: "waiting" }),
    ]);
    await finishTasks();

    // The other way round: a firing while the other caller's run waits starts the owner's own.
    const theirs = await run();
    const next = await fireTest(testUrn);
    expect(next).toMatchObject({ joined: false });
    expect(next.taskId).not.toBe(theirs);
    expect((await tasksOf(testUrn)).find((t) => t.id === next.taskId)).toMatchObject({ created_by: ROOT });
    await finishTasks();
  });

  it("setting a test ACTIVE, or turning its evaluation on change on, takes it over: the caller must hold what its actions need", async () => {
    const TAKER = "urn:li:corpuser:taker";
    await grant(sched.gateway, TAKER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    const taker = await createToken(sched.gateway, TAKER);
    const asRoot = systemClientHeaders(ROOT);
    const update = (id: string, more: Record<string, unknown>, headers: Record<string, string>) =>
      gql(
        UPDATE_TEST,
        {
          urn: `urn:li:test:${id}`,
          input: { name: id, category: "Ownership", definition: { json: definition(TAGGING) }, ...more },
        },
        headers,
      );
    const row = (id: string) => sched.gateway.prisma.metadataTest.findUnique({ where: { urn: `urn:li:test:${id}` } });
    const refusedFor = (body: GraphQLBody) => {
      expect(body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
      expect(body.errors?.[0]?.message).toBe(
        `${OTHER_MANAGER} is unauthorized to save these test actions: they need EDIT_ENTITY_TAGS (for ADD_TAGS), ` +
          `which it does not hold.`,
      );
    };

    // A draft of the root user's, set ACTIVE.
    const draft = await gql(
      CREATE_TEST,
      {
        input: {
          id: "draft-tagging",
          name: "draft-tagging",
          category: "Ownership",
          definition: { json: definition(TAGGING) },
          state: "INACTIVE",
        },
      },
      asRoot,
    );
    expect(draft.errors).toBeUndefined();
    refusedFor(await update("draft-tagging", { state: "ACTIVE" }, systemClientHeaders(OTHER_MANAGER)));
    expect(await row("draft-tagging")).toMatchObject({ ownerUrn: ROOT, state: "INACTIVE" });
    expect((await update("draft-tagging", { state: "ACTIVE" }, bearer(taker.token))).errors).toBeUndefined();
    expect(await row("draft-tagging")).toMatchObject({ ownerUrn: TAKER, ownerTokenId: taker.id, state: "ACTIVE" });
    expect(await audit("test.update", "urn:li:test:draft-tagging")).toEqual([
      expect.objectContaining({ actorUrn: TAKER, details: expect.objectContaining({ previousOwner: ROOT }) }),
    ]);

    // A test of the root user's that evaluates on change only once someone turns it on.
    const quiet = await gql(
      CREATE_TEST,
      {
        input: {
          id: "quiet-tagging",
          name: "quiet-tagging",
          category: "Ownership",
          definition: { json: definition(TAGGING) },
          evaluateOnChange: false,
        },
      },
      asRoot,
    );
    expect(quiet.errors).toBeUndefined();
    refusedFor(await update("quiet-tagging", { evaluateOnChange: true }, systemClientHeaders(OTHER_MANAGER)));
    expect(await row("quiet-tagging")).toMatchObject({ ownerUrn: ROOT, evaluateOnChange: false });
    expect((await update("quiet-tagging", { evaluateOnChange: true }, bearer(taker.token))).errors).toBeUndefined();
    expect(await row("quiet-tagging")).toMatchObject({ ownerUrn: TAKER, evaluateOnChange: true });
    // Turning it off, or leaving it as it is, starts nothing and takes nothing over.
    expect((await update("quiet-tagging", { evaluateOnChange: false }, asRoot)).errors).toBeUndefined();
    expect(await row("quiet-tagging")).toMatchObject({ ownerUrn: TAKER, evaluateOnChange: false });

    // A suspended schedule set ACTIVE again is taken over and runs again, for the caller.
    expect((await createTest("suspended-tagging", "0 13 * * *", asRoot, TAGGING)).errors).toBeUndefined();
    await sched.gateway.prisma.metadataTest.update({
      where: { urn: "urn:li:test:suspended-tagging" },
      data: { suspendedAt: new Date(), suspendedReason: "suspended for the test" },
    });
    refusedFor(
      await update(
        "suspended-tagging",
        { state: "ACTIVE", schedule: { cron: "0 13 * * *" } },
        systemClientHeaders(OTHER_MANAGER),
      ),
    );
    expect(await fireTest("urn:li:test:suspended-tagging")).toEqual({ skipped: "SUSPENDED" });
    expect((await update("suspended-tagging", { state: "ACTIVE" }, bearer(taker.token))).errors).toBeUndefined();
    expect(await viewTest("urn:li:test:suspended-tagging")).toMatchObject({
      ownerUrn: TAKER,
      schedule: { suspendedAt: null, suspendedReason: null },
    });
    const fired = await fireTest("urn:li:test:suspended-tagging");
    expect((await tasksOf("urn:li:test:suspended-tagging")).find((t) => t.id === fired.taskId)).toMatchObject({
      created_by: TAKER,
    });
    await finishTasks();
  });
});
