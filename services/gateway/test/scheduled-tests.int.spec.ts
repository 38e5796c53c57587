/**
 * Scheduled tests and result history (docs/scheduled-tests.md) against the real gateway over HTTP and GraphQL, real BullMQ
 * workers (evaluate-tests, test-schedules and schedule-sync, as an evaluation worker runs them), real PostgreSQL and
 * Redis: a test with a per-second cron runs by itself as an ordinary runTest task and pushes; its results'
 * transitions are recorded only on change, with times; updating or deleting the test has the schedule sync change or
 * remove its job scheduler; schedules converge with the rows; a schedule whose owner lost MANAGE_TESTS is suspended (audited) and starts nothing until a holder
 * resumes it; testResultHistory's privilege and bounds. The history's cap and retention are tested in the worker alone
 * (services/evaluation-worker/test/test-result-history.int.spec.ts).
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer, testScheduleId, TestSchedules, type RedisConnection } from "@mdp/queues";
import { scheduledTestKind, startSchedules } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const ORDERS = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
const VIEWER = "urn:li:corpuser:viewer";
const MANAGER = "urn:li:corpuser:manager";
const NOBODY = "urn:li:corpuser:nobody";
const LEAVER = "urn:li:corpuser:leaver";
const DESCRIBED = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
});

const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
const DELETE = `mutation($urn: String!) { deleteTest(urn: $urn) }`;
const TEST = `query($urn: String!) { test(urn: $urn) { schedule { cron nextRunAt } } }`;
const HISTORY = `query($urn: String!, $testUrn: String!, $start: Int, $count: Int) {
  testResultHistory(urn: $urn, testUrn: $testUrn, start: $start, count: $count) {
    start count total transitions { type previousType at }
  }
}`;

interface Transition {
  type: string;
  previousType: string | null;
  at: number;
}

describe("scheduled tests and result history", () => {
  let h: Harness;
  let worker: RunningWorker;
  let schedulesWorker: ReturnType<typeof startSchedules>;
  let connections: RedisConnection[];
  let schedules: TestSchedules;
  let runs: Producer<"evaluate">;

  const gql = async (query: string, variables: Record<string, unknown>, actor = ROOT) =>
    (await h.graphql(query, variables, systemClientHeaders(actor))).body;
  const describeOrders = async (description: string) => {
    const value = JSON.stringify({ description });
    const proposal = {
      entityType: "dataset",
      entityUrn: ORDERS,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value },
    };
    const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals: [proposal] });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  };
  const history = async (testUrn: string, page: { start?: number; count?: number } = {}, actor = ROOT) =>
    gql(HISTORY, { urn: ORDERS, testUrn, ...page }, actor);
  const transitions = async (testUrn: string) =>
    ((await history(testUrn)).data?.testResultHistory as { transitions: Transition[] }).transitions;
  const runTasks = async (testUrn: string) =>
    (
      await h.database.pool.query<{ id: string; state: string; created_by: string }>(
        `SELECT id, state, created_by FROM task WHERE type = 'EVALUATE_TESTS' AND request->>'testUrn' = $1
          ORDER BY created_at`,
        [testUrn],
      )
    ).rows;
  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
    (await eventually(what, probe, { timeoutMs, until: (value) => value !== undefined })) as T;
  const gone = (what: string, probe: () => Promise<unknown>) =>
    eventually(what, probe, { until: (value) => value === undefined });
  const createScheduled = async (id: string, cron: string | null, actor = MANAGER) => {
    const body = await gql(
      CREATE,
      {
        input: {
          id,
          name: id,
          category: "Quality",
          definition: { json: DESCRIBED },
          ...(cron && { schedule: { cron } }),
        },
      },
      actor,
    );
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data?.createTest as string;
  };

  beforeAll(async () => {
    // Two seconds at least between firings here (a per-second cron is refused), one second being the test's own cron.
    h = await startGateway({ SCHEDULE_MIN_INTERVAL_SECONDS: "2" });
    worker = await startEvaluationWorker(h);
    await grant(h, VIEWER, ["VIEW_TESTS"]);
    await grant(h, MANAGER, ["MANAGE_TESTS", "VIEW_TESTS"]);
    await describeOrders("All orders");
    const logger = createLogger("test-schedules-test", h.config.LOG_LEVEL);
    connections = [createRedis(h.config.REDIS_URL, "worker"), createRedis(h.config.REDIS_URL, "worker")];
    runs = new Producer("evaluate", connections[1]!, h.config.QUEUE_PREFIX);
    schedulesWorker = startSchedules({
      kinds: [scheduledTestKind],
      db: h.database,
      tasks: new TaskLifecycle(h.database, logger),
      producers: { evaluate: runs },
      logger,
      rootUserUrn: h.config.ROOT_USER_URN,
      urnNamespace: h.config.URN_NAMESPACE,
      connection: connections[0]!,
      producerConnection: connections[1]!,
      prefix: h.config.QUEUE_PREFIX,
    });
    schedules = new TestSchedules(new Producer("testSchedule", connections[1]!, h.config.QUEUE_PREFIX).queue);
  });
  afterAll(async () => {
    await schedulesWorker?.stop();
    await schedules?.queue.close();
    await runs?.close();
    await worker?.close();
    await Promise.all((connections ?? []).map((c) => closeRedis(c)));
    await h?.close();
  });

  it("refuses a bad or too frequent cron with a 400 naming input.schedule.cron", async () => {
    for (const [cron, text] of [
      ["every day", /input\.schedule\.cron: 'every day' has 2 field\(s\)/],
      ["61 * * * *", /input\.schedule\.cron: '61 \* \* \* \*' is not a cron pattern/],
      ["* * * * * *", /input\.schedule\.cron: '\* \* \* \* \* \*' fires 1 s apart .*at most once every 2 s/],
    ] as const) {
      const body = await gql(CREATE, {
        input: {
          id: "bad-cron",
          name: "bad",
          category: "Quality",
          definition: { json: DESCRIBED },
          schedule: { cron },
        },
      });
      expect(body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
      expect(body.errors?.[0]?.message).toMatch(text);
    }
    expect(await h.prisma.metadataTest.findUnique({ where: { urn: "urn:li:test:bad-cron" } })).toBeNull();
  });

  it("holds a retention policy's cron to the same shortest interval as a test's schedule", async () => {
    const body = await gql(`mutation ($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { urn } }`, {
      i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "* * * * * *" },
    });
    expect(body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(body.errors?.[0]?.message).toMatch(
      /input\.cron: '\* \* \* \* \* \*' fires 1 s apart .*at most once every 2 s/,
    );
    expect(await h.prisma.retentionPolicy.count()).toBe(0);
  });

  it("runs a scheduled test by itself as a runTest task of its owner, and records transitions only on change", async () => {
    // A per-second schedule, written straight to the row as an operator with a lower minimum would: the workers'
    // reconciliation gives it its job scheduler.
    const testUrn = await createScheduled("every-second", null);
    await h.prisma.metadataTest.update({ where: { urn: testUrn }, data: { scheduleCron: "* * * * * *" } });
    await schedulesWorker.sync.syncAll();

    // No runTest was asked for: the schedule starts the runs, each an ordinary task that getTaskStatus follows.
    const first = await until("a scheduled run to complete", async () =>
      (await runTasks(testUrn)).find((t) => t.state === "completed"),
    );
    expect(first.created_by).toBe(MANAGER);
    const status = await h.post("/gms/operations?action=getTaskStatus", { taskId: first.id });
    expect(status.body.value).toMatchObject({ state: "completed", createdBy: MANAGER });
    const audit = await h.prisma.auditEvent.findFirst({ where: { action: "test.run", targetUrn: testUrn } });
    expect(audit).toMatchObject({ actorUrn: MANAGER, details: { taskId: first.id, trigger: "schedule" } });
    expect(await transitions(testUrn)).toEqual([{ type: "SUCCESS", previousType: null, at: expect.any(Number) }]);
    // A scheduled run records what it changed, as any runTest that pushes does (testRunDiff, test-run-diff.int.spec.ts).
    const diff = await gql(
      `query($t: String!, $r: String) { testRunDiff(testUrn: $t, runId: $r) { runId newlyPassing { total entities { urn previousType } } } }`,
      { t: testUrn, r: first.id },
    );
    expect(diff.data?.testRunDiff).toEqual({
      runId: first.id,
      newlyPassing: { total: 1, entities: [{ urn: ORDERS, previousType: null }] },
    });

    // The entity starts failing: the next run records one transition; later runs that agree record nothing.
    const beforeFailing = Date.now();
    await describeOrders("nothing to see");
    const failing = await until("the failing transition", async () => {
      const list = await transitions(testUrn);
      return list.length === 2 ? list : undefined;
    });
    expect(failing[0]).toEqual({ type: "FAILURE", previousType: "SUCCESS", at: expect.any(Number) });
    expect(failing[0]!.at).toBeGreaterThanOrEqual(beforeFailing);
    expect(failing[0]!.at).toBeGreaterThan(failing[1]!.at);
    const completedSoFar = (await runTasks(testUrn)).filter((t) => t.state === "completed").length;
    await until("two more scheduled runs", async () =>
      (await runTasks(testUrn)).filter((t) => t.state === "completed").length >= completedSoFar + 2 ? true : undefined,
    );
    expect(await transitions(testUrn)).toEqual(failing);

    // Back to passing: a third transition, and "since when" is the newest one's time.
    await describeOrders("orders again");
    const passing = await until("the passing transition", async () => {
      const list = await transitions(testUrn);
      return list.length === 3 ? list : undefined;
    });
    expect(passing.map((t) => [t.type, t.previousType])).toEqual([
      ["SUCCESS", "FAILURE"],
      ["FAILURE", "SUCCESS"],
      ["SUCCESS", null],
    ]);
    // Paged, newest first.
    const page = (await history(testUrn, { start: 1, count: 1 })).data?.testResultHistory;
    expect(page).toEqual({ start: 1, count: 1, total: 3, transitions: [passing[1]] });

    // Deleting the test has the schedule sync remove its job scheduler; no run starts after that.
    expect((await gql(DELETE, { urn: testUrn }, MANAGER)).data?.deleteTest).toBe(true);
    await gone("the deleted test's scheduler", () =>
      schedules.queue.getJobScheduler(`test-${testScheduleId(testUrn)}`),
    );
    // Its history stays readable until retention removes it.
    expect(await transitions(testUrn)).toHaveLength(3);
  });

  it("suspends the schedule once its owner lacks MANAGE_TESTS, audited, starting nothing until a holder resumes it", async () => {
    const grantLeaver = async () => {
      const body = await gql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: "leaver tests", state: "ACTIVE", privileges: ["MANAGE_TESTS"], actors: { users: [LEAVER] } },
      });
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data?.createPolicy as string;
    };
    const policyUrn = await grantLeaver();
    const testUrn = await createScheduled("leavers-test", null, LEAVER);
    // The user leaves: its policy is deleted, then its test's per-second schedule starts firing.
    const deleted = await gql(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: policyUrn });
    expect(deleted.errors).toBeUndefined();
    await h.prisma.metadataTest.update({ where: { urn: testUrn }, data: { scheduleCron: "* * * * * *" } });
    await schedulesWorker.sync.syncAll();

    const suspensions = () =>
      h.prisma.auditEvent.findMany({
        where: { action: "test.schedule.suspended", targetUrn: testUrn },
        orderBy: { id: "asc" },
      });
    const [suspension] = await until("the schedule's suspension", async () => {
      const rows = await suspensions();
      return rows.length > 0 ? rows : undefined;
    });
    expect(suspension).toMatchObject({
      actorUrn: LEAVER,
      details: { missingPrivileges: ["MANAGE_TESTS"], trigger: "schedule", via: "test-schedule" },
    });
    const shown = await gql(`query($urn: String!) { test(urn: $urn) { ownerUrn schedule { suspendedAt } } }`, {
      urn: testUrn,
    });
    expect(shown.data?.test).toMatchObject({ ownerUrn: LEAVER, schedule: { suspendedAt: expect.any(Number) } });

    // Regranted, the schedule stays suspended: later firings start nothing and write nothing.
    await grantLeaver();
    const skippedFirings = async () =>
      (await schedules.queue.getCompleted(0, 10_000)).filter(
        (job) =>
          (job.data as { testUrn?: string }).testUrn === testUrn &&
          (job.returnvalue as { skipped?: string } | null)?.skipped === "SUSPENDED",
      ).length;
    await until("two firings of the suspended schedule", async () =>
      (await skippedFirings()) >= 2 ? true : undefined,
    );
    expect(await suspensions()).toHaveLength(1);
    expect(await runTasks(testUrn)).toEqual([]);
    expect(await h.prisma.auditEvent.count({ where: { action: "test.run", targetUrn: testUrn } })).toBe(0);
    expect(await schedules.queue.getJobScheduler(`test-${testScheduleId(testUrn)}`)).toMatchObject({
      pattern: "* * * * * *",
    });

    // A holder resumes it and owns it: the same schedule runs again, in the resumer's name.
    const resumed = await gql(`mutation($urn: String!) { resumeTestSchedule(urn: $urn) }`, { urn: testUrn }, MANAGER);
    expect(resumed.errors).toBeUndefined();
    const run = await until("a scheduled run after the resumption", async () =>
      (await runTasks(testUrn)).find((t) => t.state === "completed"),
    );
    expect(run.created_by).toBe(MANAGER);
    expect((await gql(DELETE, { urn: testUrn }, MANAGER)).data?.deleteTest).toBe(true);
  });

  it("has the schedule sync follow create, update and delete, and converge with the rows", async () => {
    const testUrn = await createScheduled("nightly", "0 3 * * *");
    const schedulerOf = () => schedules.queue.getJobScheduler(`test-${testScheduleId(testUrn)}`);
    const patternOf = async () => (await schedulerOf())?.pattern;
    await eventually("the created test's scheduler", patternOf, { until: (p) => p === "0 3 * * *" });
    expect(await schedulerOf()).toMatchObject({ pattern: "0 3 * * *", tz: "UTC" });
    const shown = (await gql(TEST, { urn: testUrn })).data?.test as { schedule: { cron: string; nextRunAt: number } };
    expect(shown.schedule.cron).toBe("0 3 * * *");
    expect(new Date(shown.schedule.nextRunAt).toISOString()).toMatch(/T03:00:00\.000Z$/);

    const update = (schedule: unknown) =>
      gql(
        UPDATE,
        {
          urn: testUrn,
          input: { name: "nightly", category: "Quality", definition: { json: DESCRIBED }, schedule },
        },
        MANAGER,
      );
    await update({ cron: "30 4 * * 1" });
    await eventually("the updated scheduler", patternOf, { until: (p) => p === "30 4 * * 1" });
    // An update that does not mention the schedule leaves it.
    await gql(
      UPDATE,
      { urn: testUrn, input: { name: "renamed", category: "Quality", definition: { json: DESCRIBED } } },
      MANAGER,
    );
    await schedulesWorker.sync.syncAll(); // whatever sync the rename asked for has nothing to change
    expect(await schedulerOf()).toMatchObject({ pattern: "30 4 * * 1" });
    await update(null);
    await gone("the unscheduled test's scheduler", schedulerOf);
    expect(((await gql(TEST, { urn: testUrn })).data?.test as { schedule: unknown }).schedule).toBeNull();

    // Redis refused when the row was written (simulated: the row changed behind the scheduler's back), and a leftover
    // scheduler of a test that is gone: the workers' reconciliation converges both.
    await h.prisma.metadataTest.update({ where: { urn: testUrn }, data: { scheduleCron: "15 2 * * *" } });
    await schedules.setTest("urn:li:test:gone", "0 1 * * *");
    await schedulesWorker.sync.syncAll();
    expect(await schedulerOf()).toMatchObject({ pattern: "15 2 * * *" });
    expect(await schedules.queue.getJobScheduler(`test-${testScheduleId("urn:li:test:gone")}`)).toBeUndefined();

    await gql(DELETE, { urn: testUrn }, MANAGER);
    await gone("the deleted test's scheduler", schedulerOf);
  });

  it("answers testResultHistory to VIEW_TESTS holders only, with bounded pages", async () => {
    const testUrn = "urn:li:test:any";
    expect((await history(testUrn, {}, VIEWER)).data?.testResultHistory).toMatchObject({ total: expect.any(Number) });
    expect((await history(testUrn, {}, NOBODY)).errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const tooMany = await history(testUrn, { count: 101 });
    expect(tooMany.errors?.[0]).toMatchObject({
      message: "count must be between 0 and 100",
      extensions: { code: "BAD_USER_INPUT" },
    });
    const unknown = await gql(HISTORY, { urn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.none,PROD)", testUrn });
    expect(unknown.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    const notATest = await gql(HISTORY, { urn: ORDERS, testUrn: ORDERS });
    expect(notATest.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(notATest.errors?.[0]?.message).toMatch(/testUrn/);
    // A test deleted long ago: its history is empty (pruned), not an error.
    expect((await history("urn:li:test:deleted-long-ago")).data?.testResultHistory).toMatchObject({ total: 0 });
  });
});
