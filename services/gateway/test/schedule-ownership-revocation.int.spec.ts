/**
 * A user's scheduled work when its access ends (docs/authorization.md), against the real gateway and the workers' own
 * schedule handlers run in process on real PostgreSQL and Redis: revokeActorAccess suspends and lists a user's work;
 * delegatedWork lists what a token set in motion.
 */
import { ROOT, bearer, createToken, grant, systemClientHeaders } from "./support/gateway-harness";
import { VICTIM, NOBODY, CREATE_POLICY, DELEGATED, REVOKE, PolicyView, Work } from "./support/schedule-ownership";
import { startScheduleOwnershipHarness } from "./support/schedule-ownership-harness";

describe("who scheduled work acts for", () => {
  const sched = startScheduleOwnershipHarness();
  const { gql, ok, createTest, finishTasks, fireTest, firePolicy } = sched;

  it("revokeActorAccess revokes the user's tokens, suspends its schedules and stops its tasks, and lists them", async () => {
    await grant(sched.gateway, VICTIM, ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const token = await createToken(sched.gateway, VICTIM);
    const as = bearer(token.token);
    expect((await createTest("victim-scheduled", "0 9 * * *", as)).errors).toBeUndefined();
    const policy = await ok<PolicyView>(
      "createRetentionPolicy",
      CREATE_POLICY,
      { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 9, cron: "0 9 * * *" } },
      as,
    );
    const taskId = await ok<string>("runTest", `mutation { runTest(urn: "urn:li:test:victim-scheduled") }`, {}, as);

    // Someone without MANAGE_ACCESS_TOKENS may not do it to another user.
    const refused = await gql(REVOKE, { i: { actorUrn: VICTIM } }, systemClientHeaders(NOBODY));
    expect(refused.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");

    const answer = await ok<{ revokedTokenIds: string[]; suspendedWork: Work[] }>("revokeActorAccess", REVOKE, {
      i: { actorUrn: VICTIM, reason: "laptop stolen" },
    });
    expect(answer.revokedTokenIds).toEqual([token.id]);
    const reason = `revokeActorAccess by ${ROOT}: laptop stolen`;
    expect(answer.suspendedWork).toEqual([
      expect.objectContaining({
        kind: "SCHEDULED_TEST",
        urn: "urn:li:test:victim-scheduled",
        ownerUrn: VICTIM,
        viaTokenId: token.id,
        state: "SUSPENDED",
        suspendedReason: reason,
      }),
      expect.objectContaining({ kind: "RETENTION_POLICY", urn: policy.urn, state: "SUSPENDED", viaTokenId: token.id }),
      expect.objectContaining({
        kind: "TASK",
        urn: `urn:li:task:${taskId}`,
        viaTokenId: token.id,
        state: "cancelled",
        cancelRequested: true,
      }),
    ]);
    // The token no longer works; the schedule's firings start nothing.
    const me = await sched.gateway.graphql(`{ me { urn } }`, {}, as);
    expect(me.status).toBe(401);
    expect(await fireTest("urn:li:test:victim-scheduled")).toEqual({ skipped: "SUSPENDED" });
    expect(await firePolicy(policy.urn)).toEqual({ skipped: "SUSPENDED" });
    const rows = await sched.gateway.prisma.auditEvent.findMany({
      where: { actorUrn: ROOT, createdAt: { gte: new Date(answer.suspendedWork[0]!.suspendedAt! - 1000) } },
      orderBy: { id: "asc" },
    });
    expect(rows.map((r) => r.action)).toEqual(
      expect.arrayContaining([
        "accessToken.revoke",
        "accessToken.revokeAll",
        "test.schedule.suspended",
        "retentionPolicy.suspended",
        "task.cancel",
        "actor.revokeAccess",
      ]),
    );
    expect(rows.find((r) => r.action === "actor.revokeAccess")).toMatchObject({
      targetUrn: VICTIM,
      details: expect.objectContaining({ tokens: 1, scheduledTests: 1, retentionPolicies: 1, tasks: 1 }),
    });
  });

  it("delegatedWork lists what one token set in motion, to its user or a MANAGE_ACCESS_TOKENS holder", async () => {
    const USER = "urn:li:corpuser:delegator";
    await grant(sched.gateway, USER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const first = await createToken(sched.gateway, USER);
    const second = await createToken(sched.gateway, USER);
    expect((await createTest("via-first", "0 10 * * *", bearer(first.token))).errors).toBeUndefined();
    const firstTask = await ok<string>(
      "runTest",
      `mutation { runTest(urn: "urn:li:test:via-first") }`,
      {},
      bearer(first.token),
    );
    await ok("runTest", `mutation { runTest(urn: "urn:li:test:via-first", batchSize: 5) }`, {}, bearer(second.token));
    // A token minted with the first (as the token chain records it).
    const child = await createToken(sched.gateway, USER);
    await sched.gateway.prisma.accessToken.update({ where: { id: child.id }, data: { parentTokenId: first.id } });

    const listed = await ok<Work[]>("delegatedWork", DELEGATED, { i: { tokenId: first.id } }, bearer(first.token));
    expect(listed.map((w) => [w.kind, w.urn, w.viaTokenId, w.state])).toEqual([
      ["SCHEDULED_TEST", "urn:li:test:via-first", first.id, "ACTIVE"],
      ["TASK", `urn:li:task:${firstTask}`, first.id, "waiting"],
      ["ACCESS_TOKEN", `urn:li:dataHubAccessToken:${child.id}`, first.id, "LIVE"],
    ]);
    // By user: everything it set in motion, whichever token.
    const byUser = await ok<Work[]>("delegatedWork", DELEGATED, { i: { ownerUrn: USER } }, systemClientHeaders(USER));
    expect(byUser.filter((w) => w.kind === "TASK")).toHaveLength(2);
    // Bounded, and another user's needs MANAGE_ACCESS_TOKENS.
    expect((await ok<Work[]>("delegatedWork", DELEGATED, { i: { ownerUrn: USER, limit: 1 } })).length).toBe(1);
    const tooMany = await gql(DELEGATED, { i: { ownerUrn: USER, limit: 1001 } });
    expect(tooMany.errors?.[0]?.message).toContain("input.limit must be a whole number from 1 to 1000");
    const NOSY = "urn:li:corpuser:nosy";
    await grant(sched.gateway, NOSY, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const nosy = await gql(DELEGATED, { i: { tokenId: first.id } }, systemClientHeaders(NOSY));
    expect(nosy.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const neither = await gql(DELEGATED, { i: {} });
    expect(neither.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    await finishTasks();
  });
});
