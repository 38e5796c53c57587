/**
 * Who deferred work acts for (docs/authorization.md), against the real gateway and the workers' own schedule
 * handlers run in process on real PostgreSQL and Redis: the principal who last set what a scheduled test or retention
 * policy does owns it, its firings act for that owner (task and audit rows name it, not the creator), and are
 * suspended — visibly, audited, resumable by a holder — once the owner lacks what they need; a user owns at most
 * MAX_SCHEDULES_PER_USER schedules; firings spend their owner's runTest budget; revokeActorAccess suspends and lists
 * a user's work; delegatedWork lists what a token set in motion.
 */
import { createLogger } from "@mdp/core";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests, type RedisConnection } from "@mdp/queues";
import { fireSchedule, retentionPolicyKind, scheduledTestKind, type FiringDeps } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type GraphQLBody,
  type Harness,
} from "./support/gateway-harness";

const EDITOR = "urn:li:corpuser:editor";
const OTHER_MANAGER = "urn:li:corpuser:other-manager";
const OPS = "urn:li:corpuser:ops";
const CAPPER = "urn:li:corpuser:capper";
const RUNNER = "urn:li:corpuser:runner";
const VICTIM = "urn:li:corpuser:victim";
const NOBODY = "urn:li:corpuser:nobody";

const definition = (actions?: unknown) =>
  JSON.stringify({
    on: { types: ["dataset"] },
    rules: { property: "datasetProperties.description", operator: "exists" },
    ...(actions !== undefined && { actions }),
  });
const TAGGING = { passing: [{ type: "ADD_TAGS", values: ["urn:li:tag:documented"] }], failing: [] };
const OWNING = { passing: [{ type: "ADD_OWNERS", values: ["urn:li:corpuser:steward"] }], failing: [] };

const CREATE_TEST = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const UPDATE_TEST = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
const TEST = `query($urn: String!) { test(urn: $urn) { ownerUrn createdBy schedule { cron suspendedAt suspendedReason } } }`;
const RESUME_TEST = `mutation($urn: String!) { resumeTestSchedule(urn: $urn) }`;
const POLICY_FIELDS = "urn createdBy ownerUrn suspendedAt suspendedReason";
const CREATE_POLICY = `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { ${POLICY_FIELDS} } }`;
const UPDATE_POLICY = `mutation($u: String!, $i: UpdateRetentionPolicyInput!) { updateRetentionPolicy(urn: $u, input: $i) { ${POLICY_FIELDS} } }`;
const POLICY = `query($u: String!) { retentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`;
const RESUME_POLICY = `mutation($u: String!) { resumeRetentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`;
const WORK_FIELDS = "kind urn ownerUrn viaTokenId state suspendedAt suspendedReason cancelRequested";
const DELEGATED = `query($i: DelegatedWorkInput!) { delegatedWork(input: $i) { ${WORK_FIELDS} } }`;
const REVOKE = `mutation($i: RevokeActorAccessInput!) {
  revokeActorAccess(input: $i) { revokedTokenIds suspendedWork { ${WORK_FIELDS} } }
}`;

interface TestView {
  ownerUrn: string;
  createdBy: string;
  schedule: { cron: string; suspendedAt: number | null; suspendedReason: string | null } | null;
}
interface PolicyView {
  urn: string;
  createdBy: string;
  ownerUrn: string;
  suspendedAt: number | null;
  suspendedReason: string | null;
}
interface Work {
  kind: string;
  urn: string;
  ownerUrn: string;
  viaTokenId: string | null;
  state: string;
  suspendedAt: number | null;
  suspendedReason: string | null;
  cancelRequested: boolean | null;
}

describe("who scheduled work acts for", () => {
  let h: Harness;
  let connection: RedisConnection;
  let rateLimits: RateLimits;
  let runs: Producer<"evaluate">;
  let truncations: Producer<"truncate">;
  let syncQueue: Producer<"scheduleSync">;
  let fireTest: (testUrn: string) => Promise<Record<string, unknown>>;
  let firePolicy: (policyUrn: string) => Promise<Record<string, unknown>>;

  const gql = async (query: string, variables: Record<string, unknown>, headers = systemClientHeaders(ROOT)) =>
    (await h.graphql(query, variables, headers)).body;
  const ok = async <T>(field: string, query: string, variables: Record<string, unknown>, headers?: object) => {
    const body: GraphQLBody = await gql(query, variables, headers as Record<string, string> | undefined);
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data![field] as T;
  };
  /** A policy granting `privileges` to `user`; returns its urn, so the grant can be taken away. */
  const grantPolicy = (user: string, privileges: string[]) =>
    ok<string>("createPolicy", `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
      i: { name: `${user} ${privileges.join(",")}`, state: "ACTIVE", privileges, actors: { users: [user] } },
    });
  const revokePolicy = (urn: string) =>
    ok<boolean>("deletePolicy", `mutation($u: String!) { deletePolicy(urn: $u) }`, { u: urn });
  const createTest = (id: string, cron: string | null, headers: Record<string, string>, actions?: unknown) =>
    gql(
      CREATE_TEST,
      {
        input: {
          id,
          name: id,
          category: "Ownership",
          definition: { json: definition(actions) },
          ...(cron && { schedule: { cron } }),
        },
      },
      headers,
    );
  const viewTest = (urn: string) => ok<TestView>("test", TEST, { urn });
  const tasksOf = async (testUrn: string) =>
    (
      await h.database.pool.query<{ id: string; created_by: string; created_via: string | null; state: string }>(
        `SELECT id, created_by, created_via, state FROM task WHERE request->>'testUrn' = $1 ORDER BY created_at`,
        [testUrn],
      )
    ).rows;
  const audit = (action: string, targetUrn: string) =>
    h.prisma.auditEvent.findMany({ where: { action, targetUrn }, orderBy: { id: "asc" } });
  /** As if the runs queued so far had finished: the next firing starts a task rather than joining one. */
  const finishTasks = () => h.database.pool.query(`UPDATE task SET state = 'completed' WHERE state = 'waiting'`);

  beforeAll(async () => {
    h = await startGateway({ SCHEDULE_MIN_INTERVAL_SECONDS: "2" });
    const logger = createLogger("schedule-ownership-test", h.config.LOG_LEVEL);
    connection = createRedis(h.config.REDIS_URL, "producer");
    rateLimits = new RateLimits(RateLimits.connect(h.config, logger), h.config);
    runs = new Producer("evaluate", connection, h.config.QUEUE_PREFIX);
    truncations = new Producer("truncate", connection, h.config.QUEUE_PREFIX);
    syncQueue = new Producer("scheduleSync", connection, h.config.QUEUE_PREFIX);
    // The workers' own firing runner, as a firing runs it (no evaluation or truncation runs: the tasks stay waiting).
    const deps: FiringDeps = {
      db: h.database,
      tasks: new TaskLifecycle(h.database, logger),
      producers: { evaluate: runs, truncate: truncations },
      sync: new ScheduleSyncRequests(syncQueue),
      logger,
      urnNamespace: h.config.URN_NAMESPACE,
      rootUserUrn: h.config.ROOT_USER_URN,
      rateLimits,
    };
    fireTest = async (testUrn) => (await fireSchedule(scheduledTestKind, testUrn, deps)) as Record<string, unknown>;
    firePolicy = async (policyUrn) =>
      (await fireSchedule(retentionPolicyKind, policyUrn.split(":").at(-1)!, deps)) as Record<string, unknown>;
    await grant(h, OTHER_MANAGER, ["MANAGE_TESTS"]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([runs?.close(), truncations?.close(), syncQueue?.close()]);
    await rateLimits?.close();
    if (connection) await closeRedis(connection);
    await h?.close();
  });

  it("work set through a token another user minted answers to that minter too: the firing suspends when the minter loses what it needs", async () => {
    const MINTER = "urn:li:corpuser:chain-minter";
    const HOLDER = "urn:li:corpuser:chain-holder";
    const minterGrant = await grantPolicy(MINTER, ["MANAGE_ACCESS_TOKENS", "MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    await grantPolicy(HOLDER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    // The minter, through the system client, mints a token for the holder, and sets up a tagging schedule with it.
    const minted = await createToken(h, HOLDER, systemClientHeaders(MINTER));
    expect((await createTest("chain-made", "0 3 * * *", bearer(minted.token), TAGGING)).errors).toBeUndefined();
    const testUrn = "urn:li:test:chain-made";
    expect(await viewTest(testUrn)).toMatchObject({ ownerUrn: HOLDER });
    expect(await fireTest(testUrn)).toMatchObject({ taskId: expect.any(String) });

    // The holder still holds everything; the minter no longer does: the token could not, so the work may not.
    await revokePolicy(minterGrant);
    expect(await fireTest(testUrn)).toEqual({ suspended: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"] });
    expect(await viewTest(testUrn)).toMatchObject({ schedule: { suspendedAt: expect.any(Number) } });
  });

  it("a scheduled test acts for whoever last set what it does, is suspended when they lose it, and a holder resumes it", async () => {
    const testUrn = "urn:li:test:root-made";
    expect((await createTest("root-made", "0 3 * * *", systemClientHeaders(ROOT))).errors).toBeUndefined();
    const editorGrant = await grantPolicy(EDITOR, [
      "MANAGE_TESTS",
      "EDIT_ENTITY_TAGS",
      "GENERATE_PERSONAL_ACCESS_TOKENS",
    ]);
    const editorToken = await createToken(h, EDITOR);

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
    expect(await h.prisma.metadataTest.findUnique({ where: { urn: testUrn } })).toMatchObject({
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
    const job = await runs.queue.getJob(fired.taskId as string);
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
    await grant(h, SCOPED, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    const scoped = await createToken(h, SCOPED, systemClientHeaders(ROOT), { scopes: ["MANAGE_TESTS"] });
    const refused = await createTest("scoped-tagging", "0 11 * * *", bearer(scoped.token), TAGGING);
    expect(refused.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(refused.errors?.[0]?.message).toContain("need EDIT_ENTITY_TAGS");
    expect(await h.prisma.metadataTest.findUnique({ where: { urn: "urn:li:test:scoped-tagging" } })).toBeNull();
    // Without actions, MANAGE_TESTS (within the scopes) is all its runs need.
    expect((await createTest("scoped-plain", "0 11 * * *", bearer(scoped.token))).errors).toBeUndefined();
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
    const task = await h.prisma.task.findUnique({ where: { id: fired.taskId as string } });
    expect(task).toMatchObject({ createdBy: OPS, type: "TRUNCATE_TIMESERIES" });
    const runRows = await h.prisma.auditEvent.findMany({
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
    expect(await h.prisma.task.count({ where: { state: "waiting" } })).toBe(0);

    const byOps = await gql(RESUME_POLICY, { u: created.urn }, systemClientHeaders(OPS));
    expect(byOps.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const resumed = await ok<PolicyView>("resumeRetentionPolicy", RESUME_POLICY, { u: created.urn });
    expect(resumed).toMatchObject({ ownerUrn: ROOT, suspendedAt: null, suspendedReason: null });
    expect(await audit("retentionPolicy.resume", created.urn)).toEqual([
      expect.objectContaining({ actorUrn: ROOT, details: expect.objectContaining({ previousOwner: OPS }) }),
    ]);
    const after = await firePolicy(created.urn);
    expect(await h.prisma.task.findUnique({ where: { id: after.taskId as string } })).toMatchObject({
      createdBy: ROOT,
    });
    await finishTasks();
    await ok("deleteRetentionPolicy", `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, { u: created.urn });
  });

  it("refuses a user's 21st schedule naming MAX_SCHEDULES_PER_USER, even when two race for the last place", async () => {
    await grant(h, CAPPER, ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS"]);
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
    expect(await h.prisma.metadataTest.count({ where: { ownerUrn: CAPPER, scheduleCron: { not: null } } })).toBe(20);
  });

  it("counts each firing against its owner's runTest limit: with the budget spent, a firing starts nothing", async () => {
    await grant(h, RUNNER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const runner = await createToken(h, RUNNER);
    expect((await createTest("runner-scheduled", "0 7 * * *", bearer(runner.token))).errors).toBeUndefined();
    expect((await createTest("runner-manual", null, bearer(runner.token))).errors).toBeUndefined();
    // The owner's own runTest calls spend the minute's budget (RATE_LIMIT_TEST_RUNS_PER_MINUTE, 10)...
    for (let i = 0; i < h.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE; i++) {
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
    await grant(h, FIRER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const firer = await createToken(h, FIRER);
    expect((await createTest("firer-scheduled", "0 8 * * *", bearer(firer.token))).errors).toBeUndefined();
    for (let i = 0; i < h.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE; i++) {
      expect(await fireTest("urn:li:test:firer-scheduled")).toHaveProperty("taskId");
    }
    const refused = await gql(`mutation { runTest(urn: "urn:li:test:firer-scheduled") }`, {}, bearer(firer.token));
    expect(refused.errors?.[0]?.extensions?.code).toBe("TOO_MANY_REQUESTS");
    await finishTasks();
  });

  it("revokeActorAccess revokes the user's tokens, suspends its schedules and stops its tasks, and lists them", async () => {
    await grant(h, VICTIM, ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const token = await createToken(h, VICTIM);
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
    const me = await h.graphql(`{ me { urn } }`, {}, as);
    expect(me.status).toBe(401);
    expect(await fireTest("urn:li:test:victim-scheduled")).toEqual({ skipped: "SUSPENDED" });
    expect(await firePolicy(policy.urn)).toEqual({ skipped: "SUSPENDED" });
    const rows = await h.prisma.auditEvent.findMany({
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

  it("runs another caller's runTest as a run of its own: it neither joins the owner's run nor has a firing join it", async () => {
    const JOINER = "urn:li:corpuser:joiner";
    await grant(h, JOINER, ["MANAGE_TESTS"]);
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
    await grant(h, TAKER, ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"]);
    const taker = await createToken(h, TAKER);
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
    const row = (id: string) => h.prisma.metadataTest.findUnique({ where: { urn: `urn:li:test:${id}` } });
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
    await h.prisma.metadataTest.update({
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

  it("delegatedWork lists what one token set in motion, to its user or a MANAGE_ACCESS_TOKENS holder", async () => {
    const USER = "urn:li:corpuser:delegator";
    await grant(h, USER, ["MANAGE_TESTS", "GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const first = await createToken(h, USER);
    const second = await createToken(h, USER);
    expect((await createTest("via-first", "0 10 * * *", bearer(first.token))).errors).toBeUndefined();
    const firstTask = await ok<string>(
      "runTest",
      `mutation { runTest(urn: "urn:li:test:via-first") }`,
      {},
      bearer(first.token),
    );
    await ok("runTest", `mutation { runTest(urn: "urn:li:test:via-first", batchSize: 5) }`, {}, bearer(second.token));
    // A token minted with the first (as the token chain records it).
    const child = await createToken(h, USER);
    await h.prisma.accessToken.update({ where: { id: child.id }, data: { parentTokenId: first.id } });

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
    await grant(h, NOSY, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const nosy = await gql(DELEGATED, { i: { tokenId: first.id } }, systemClientHeaders(NOSY));
    expect(nosy.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const neither = await gql(DELEGATED, { i: {} });
    expect(neither.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    await finishTasks();
  });
});
