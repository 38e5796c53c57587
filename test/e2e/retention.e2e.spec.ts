/**
 * Retention policies against the real processes: two gateways and two truncation workers on one PostgreSQL and Redis.
 * CRUD and its refusals over GraphQL; a dry run answers truncateTimeseriesAspect's own report; a manual run is an
 * ordinary truncation task with exact counts; a schedule every second runs by itself through a worker, never twice at
 * once however many replicas; deleting the policy removes its schedule; a policy whose owner lost
 * MANAGE_SYSTEM_OPERATIONS is suspended (audited) and starts nothing until a holder resumes it.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { Queue } from "bullmq";
import { bulkLoad, createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, QUEUE_NAMES, type RedisConnection } from "@mdp/queues";
import {
  freePort,
  queuePrefix,
  startService,
  systemClient,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const ROOT = "urn:li:corpuser:admin";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const headers = systemClient(ROOT);

interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}
interface Policy {
  urn: string;
  entityType: string;
  aspect: string;
  retainDays: number;
  cron: string;
  nextRunTime: number | null;
  lastTaskId: string | null;
  lastTaskState: string | null;
  createdBy: string;
  ownerUrn: string;
  suspendedAt: number | null;
}
interface TaskStatus {
  taskId: string;
  type: string;
  state: string;
  request: { endTimeMillis: number; retentionPolicy?: string };
  result: { deleted: number } | null;
  attemptsMade: number;
  createdBy: string;
  startedAt: number | null;
  finishedAt: number | null;
}

const MDP = path.resolve(__dirname, "..", "..", "cli", "bin", "mdp.cjs");

const POLICY_FIELDS =
  "urn entityType aspect retainDays cron nextRunTime lastTaskId lastTaskState createdBy ownerUrn suspendedAt";

describe("retention policies (two gateways, two truncation workers)", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let redis: RedisConnection;
  let scheduleQueue: Queue;
  const services: RunningService[] = [];
  const urls: string[] = [];
  let env: Record<string, string>;

  const graphql = async (query: string, variables: Record<string, unknown> = {}, url = urls[0]!) => {
    const res = await fetch(`${url}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as GraphQLAnswer;
  };
  const ok = async <T>(field: string, query: string, variables: Record<string, unknown> = {}, url?: string) => {
    const answer = await graphql(query, variables, url);
    if (answer.errors) throw new Error(JSON.stringify(answer.errors));
    return answer.data![field] as T;
  };
  const create = (input: Record<string, unknown>, url?: string) =>
    ok<Policy>(
      "createRetentionPolicy",
      `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { ${POLICY_FIELDS} } }`,
      { i: input },
      url,
    );
  const get = (urn: string) =>
    ok<Policy | null>("retentionPolicy", `query($u: String!) { retentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`, {
      u: urn,
    });
  const remove = (urn: string, url?: string) =>
    ok<boolean>("deleteRetentionPolicy", `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, { u: urn }, url);
  const run = (urn: string, dryRun?: boolean) =>
    ok<string>(
      "runRetentionPolicy",
      dryRun === undefined
        ? `mutation($u: String!) { runRetentionPolicy(urn: $u) }`
        : `mutation($u: String!, $d: Boolean) { runRetentionPolicy(urn: $u, dryRun: $d) }`,
      { u: urn, d: dryRun },
    );
  const post = async (action: string, body: unknown) => {
    const res = await fetch(`${urls[0]}/gms/operations?action=${action}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { value: unknown } };
  };
  const status = async (taskId: string) => (await post("getTaskStatus", { taskId })).body.value as TaskStatus;
  /** The aspect's rows, by the exact counters getIndexSizes reads. */
  const rowCount = async (aspectName: string) => {
    const { indexSizes } = (await post("getIndexSizes", {})).body.value as {
      indexSizes: Array<{ entityName: string; aspectName: string; rowCount: number }>;
    };
    return indexSizes.find((i) => i.entityName === "dataset" && i.aspectName === aspectName)?.rowCount ?? 0;
  };
  /** The policy's tasks, oldest first. */
  const tasksOf = async (urn: string) => {
    const { rows } = await database.pool.query<{ id: string }>(
      `SELECT id FROM task WHERE request->>'retentionPolicy' = $1 ORDER BY created_at`,
      [urn],
    );
    return Promise.all(rows.map((r) => status(r.id)));
  };

  beforeAll(async () => {
    db = await createTestDatabase("e2e_retention");
    database = createDatabase(db.url);
    const prefix = queuePrefix("e2e-retention");
    // A per-second cron below: the scheduler's own tests lower the shortest interval between firings.
    // More schedules than the 100 policies the limit's test creates, all owned by the root user.
    env = {
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      MAX_SCHEDULES_PER_USER: "200",
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      urls.push(`http://127.0.0.1:${port}`);
      services.push(startService("gateway", { ...env, PORT: String(port) }));
      services.push(startService("truncation-worker", env));
    }
    await Promise.all(
      services.map((s, i) =>
        s.name === "gateway" ? waitUntilReady(urls[i / 2]!, s) : waitForOutput(s, "worker running"),
      ),
    );
    redis = createRedis(REDIS_URL, "producer");
    scheduleQueue = new Queue(QUEUE_NAMES.retention, { connection: redis, prefix });
  }, 120_000);

  /** The schedule sync (a worker's job, asked for by each write) has made the schedulers this many. */
  const schedulersAre = (count: number) =>
    waitFor(`${count} retention schedulers`, async () => (await scheduleQueue.getJobSchedulersCount()) === count);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await scheduleQueue?.close();
    if (redis) await closeRedis(redis);
    await database?.close();
    await db?.drop();
  });

  it("creates, reads, lists, updates and deletes a policy, scheduled in step with its row, and audits each", async () => {
    const created = await create({
      entityType: "dataset",
      aspect: "datasetprofile",
      retainDays: 30,
      cron: "0 3 * * *",
    });
    expect(created).toMatchObject({ entityType: "dataset", aspect: "datasetProfile", retainDays: 30, createdBy: ROOT });
    expect(created.urn).toMatch(/^urn:li:retentionPolicy:[0-9a-f-]{36}$/);
    expect(created.lastTaskId).toBeNull();
    // The next 03:00 UTC, of the cron the schedule sync gives the job scheduler.
    const next = new Date(created.nextRunTime!);
    expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([3, 0, 0]);
    expect(created.nextRunTime! - Date.now()).toBeLessThanOrEqual(DAY_MILLIS);
    await schedulersAre(1);

    // The other gateway sees the same policy.
    const listed = await ok<{ total: number; retentionPolicies: Policy[] }>(
      "listRetentionPolicies",
      `{ listRetentionPolicies(input: {start: 0, count: 10}) { total count retentionPolicies { ${POLICY_FIELDS} } } }`,
      {},
      urls[1],
    );
    expect(listed.total).toBe(1);
    expect(listed.retentionPolicies[0]).toEqual(created);

    const updated = await ok<Policy>(
      "updateRetentionPolicy",
      `mutation($u: String!) { updateRetentionPolicy(urn: $u, input: {retainDays: 7, cron: "30 4 * * 1"}) { ${POLICY_FIELDS} } }`,
      { u: created.urn },
    );
    expect(updated).toMatchObject({ retainDays: 7, cron: "30 4 * * 1", aspect: "datasetProfile" });
    const nextUpdated = new Date(updated.nextRunTime!);
    expect([nextUpdated.getUTCDay(), nextUpdated.getUTCHours(), nextUpdated.getUTCMinutes()]).toEqual([1, 4, 30]);
    await schedulersAre(1);

    expect(await remove(created.urn, urls[1])).toBe(true);
    expect(await get(created.urn)).toBeNull();
    await schedulersAre(0);
    const again = await graphql(
      `
        mutation ($u: String!) {
          deleteRetentionPolicy(urn: $u)
        }
      `,
      { u: created.urn },
    );
    expect(again.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");

    const { rows } = await database.pool.query<{ action: string }>(
      `SELECT action FROM audit_event WHERE target_urn = $1 ORDER BY id`,
      [created.urn],
    );
    expect(rows.map((r) => r.action)).toEqual([
      "retentionPolicy.create",
      "retentionPolicy.update",
      "retentionPolicy.delete",
    ]);
  });

  it.each([
    [{ cron: "61 * * * *" }, "input.cron: '61 * * * *' is not a cron pattern"],
    [{ cron: "* * * * * * *" }, "input.cron: '* * * * * * *' has 7 field(s)"],
    [{ cron: "0 0 30 2 *" }, "input.cron"],
    [{ cron: "x".repeat(257) }, "input.cron: is longer than the limit of 256 characters"],
    [{ retainDays: 0 }, "input.retainDays: must be at least 1 (day)"],
    [{ retainDays: 3651 }, "input.retainDays: must be at most 3650 (days, 10 years)"],
    [{ aspect: "status" }, "input.aspect: No time-series aspect 'status' for entity type 'dataset'"],
    [{ entityType: "nosuchtype" }, "input.aspect: No time-series aspect 'datasetProfile' for entity type 'nosuchtype'"],
  ])("refuses %j with a 400 naming the field and the limit", async (change, message) => {
    const answer = await graphql(
      `
        mutation ($i: CreateRetentionPolicyInput!) {
          createRetentionPolicy(input: $i) {
            urn
          }
        }
      `,
      { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *", ...change } },
    );
    expect(answer.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(answer.errors?.[0]?.message).toContain(message);
    await schedulersAre(0);
  });

  it("refuses an unknown field, and an update that changes nothing, naming them", async () => {
    const unknown = await graphql(`
      mutation {
        createRetentionPolicy(
          input: { entityType: "dataset", aspect: "datasetProfile", retainDays: 1, cron: "* * * * *", tz: "UTC" }
        ) {
          urn
        }
      }
    `);
    expect(unknown.errors?.[0]?.message).toContain('Field "tz" is not defined by type "CreateRetentionPolicyInput"');
    const policy = await create({ entityType: "dataset", aspect: "operation", retainDays: 3, cron: "0 0 1 1 *" });
    const empty = await graphql(
      `
        mutation ($u: String!) {
          updateRetentionPolicy(urn: $u, input: {}) {
            urn
          }
        }
      `,
      {
        u: policy.urn,
      },
    );
    expect(empty.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(empty.errors?.[0]?.message).toContain("give at least one field to change");
    const wrongType = await graphql(`
      mutation {
        runRetentionPolicy(urn: "urn:li:corpuser:x")
      }
    `);
    expect(wrongType.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    await remove(policy.urn);
  });

  it("refuses more than 100 policies with a 409 naming the limit", async () => {
    const urns: string[] = [];
    for (let i = 0; i < 100; i++) {
      urns.push(
        (await create({ entityType: "chart", aspect: "chartUsageStatistics", retainDays: 1 + i, cron: "0 0 1 1 *" }))
          .urn,
      );
    }
    const refused = await graphql(`
      mutation {
        createRetentionPolicy(
          input: { entityType: "chart", aspect: "chartUsageStatistics", retainDays: 1, cron: "0 0 1 1 *" }
        ) {
          urn
        }
      }
    `);
    expect(refused.errors?.[0]?.extensions?.code).toBe("CONFLICT");
    expect(refused.errors?.[0]?.message).toContain("There are already 100 retention policies, the limit");
    await schedulersAre(100);
    for (const urn of urns) await remove(urn);
    await schedulersAre(0);
  }, 120_000);

  it("dry-runs with truncateTimeseriesAspect's report, then runs as a truncation task with exact counts", async () => {
    const now = Date.now();
    // 1,000 rows 30 to 21 days old, 500 from 4 days ago to the end of today: a 10-day policy deletes exactly the first.
    await bulkLoad(database.pool, {
      entityType: "dataset",
      aspectName: "datasetProfile",
      rows: 1000,
      days: 10,
      endMillis: now - 21 * DAY_MILLIS,
      urns: 10,
    });
    await bulkLoad(database.pool, {
      entityType: "dataset",
      aspectName: "datasetProfile",
      rows: 500,
      days: 5,
      endMillis: now,
      urns: 10,
    });
    const policy = await create({ entityType: "dataset", aspect: "datasetProfile", retainDays: 10, cron: "0 0 1 1 *" });

    const report = await run(policy.urn);
    const truncation = await post("truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: Date.now() - 10 * DAY_MILLIS,
    });
    expect(report).toBe(truncation.body.value);
    expect(report).toMatch(/^Delete 1000 out of 1500 rows \(66\.67%\)\. .* This was a dry run\./);
    expect(await run(policy.urn, true)).toBe(report);
    expect(await rowCount("datasetProfile")).toBe(1500);

    const before = Date.now();
    const taskId = await run(policy.urn, false);
    await waitFor(`task ${taskId}`, async () => (await status(taskId)).state === "completed", 60_000);
    const task = await status(taskId);
    expect(task).toMatchObject({ type: "TRUNCATE_TIMESERIES", createdBy: ROOT, result: { deleted: 1000 } });
    expect(task.request.retentionPolicy).toBe(policy.urn);
    // Cut at now − 10 days of 86,400,000 ms, now being when the run was asked for.
    expect(task.request.endTimeMillis).toBeGreaterThanOrEqual(before - 10 * DAY_MILLIS);
    expect(task.request.endTimeMillis).toBeLessThanOrEqual(Date.now() - 10 * DAY_MILLIS);
    expect(await rowCount("datasetProfile")).toBe(500);
    expect(await get(policy.urn)).toMatchObject({ lastTaskId: taskId, lastTaskState: "completed" });
    const listed = await post("listTasks", { type: "TRUNCATE_TIMESERIES" });
    expect((listed.body.value as { tasks: TaskStatus[] }).tasks.map((t) => t.taskId)).toContain(taskId);
    const { rows } = await database.pool.query<{ action: string; target_urn: string }>(
      `SELECT action, target_urn FROM audit_event WHERE details->>'taskId' = $1 ORDER BY id`,
      [taskId],
    );
    expect(rows).toEqual([
      { action: "timeseries.truncate", target_urn: `urn:li:task:${taskId}` },
      { action: "retentionPolicy.run", target_urn: policy.urn },
    ]);
    await remove(policy.urn);
  }, 90_000);

  it("runs a schedule every second by itself on the workers, never twice at once, until the policy is deleted", async () => {
    await bulkLoad(database.pool, {
      entityType: "dataset",
      aspectName: "datasetUsageStatistics",
      rows: 300,
      days: 3,
      endMillis: Date.now() - 5 * DAY_MILLIS,
      urns: 3,
    });
    // Created through the second gateway; both gateways and both workers see the one schedule.
    const policy = await create(
      { entityType: "dataset", aspect: "datasetUsageStatistics", retainDays: 1, cron: "* * * * * *" },
      urls[1],
    );
    await schedulersAre(1);
    // No manual trigger: the schedule's first run deletes every row (all older than a day).
    await waitFor(
      "a scheduled run to complete",
      async () => (await get(policy.urn))?.lastTaskState === "completed",
      30_000,
    );
    expect(await rowCount("datasetUsageStatistics")).toBe(0);
    // Let it fire a few more times (each later run finds nothing to delete).
    await waitFor("four scheduled runs", async () => (await tasksOf(policy.urn)).length >= 4, 30_000);

    expect(await remove(policy.urn)).toBe(true);
    await schedulersAre(0);
    // A firing already handed to a worker may still finish; then nothing more comes.
    await waitFor("the last run to end", async () =>
      (await tasksOf(policy.urn)).every((t) => ["completed", "failed", "cancelled"].includes(t.state)),
    );
    const settled = (await tasksOf(policy.urn)).length;

    const tasks = await tasksOf(policy.urn);
    expect(tasks[0]!.result).toEqual(expect.objectContaining({ deleted: 300 }));
    for (const task of tasks) {
      expect(task).toMatchObject({ state: "completed", createdBy: ROOT, attemptsMade: 1 });
    }
    // Never two runs at once: each task started after the previous one finished (a firing during a run joins it).
    for (let i = 1; i < tasks.length; i++) {
      expect(tasks[i]!.startedAt!).toBeGreaterThanOrEqual(tasks[i - 1]!.finishedAt!);
    }
    // One firing per second at most, each turned into one task by one of the two workers.
    const { rows: audit } = await database.pool.query<{ task_id: string; via: string }>(
      `SELECT details->>'taskId' AS task_id, details->>'via' AS via FROM audit_event
        WHERE action = 'retentionPolicy.run' AND target_urn = $1`,
      [policy.urn],
    );
    expect(audit.map((a) => a.task_id).sort()).toEqual(tasks.map((t) => t.taskId).sort());
    expect(new Set(audit.map((a) => a.via))).toEqual(new Set(["retention-schedule"]));
    const span = (tasks.at(-1)!.startedAt! - tasks[0]!.startedAt!) / 1000;
    expect(tasks.length).toBeLessThanOrEqual(Math.ceil(span) + 1);

    // Deleted: three more seconds bring no firing (the schedule would have fired three times).
    const quiet = Date.now() + 3_000;
    await waitFor("three quiet seconds", async () => Date.now() > quiet, 5_000);
    expect((await tasksOf(policy.urn)).length).toBe(settled);
  }, 120_000);

  it("suspends a policy once its owner lacks MANAGE_SYSTEM_OPERATIONS, audited, until a holder resumes it", async () => {
    const OPS = "urn:li:corpuser:retention-ops";
    const grantUrn = await ok<string>("createPolicy", `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
      i: { name: "ops", state: "ACTIVE", privileges: ["MANAGE_SYSTEM_OPERATIONS"], actors: { users: [OPS] } },
    });
    // Created by OPS, firing every second: its runs act for OPS.
    const res = await fetch(`${urls[0]}/api/graphql`, {
      method: "POST",
      headers: systemClient(OPS),
      body: JSON.stringify({
        query: `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { ${POLICY_FIELDS} } }`,
        variables: { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 1, cron: "* * * * * *" } },
      }),
    });
    const created = (await res.json()) as GraphQLAnswer;
    if (created.errors) throw new Error(JSON.stringify(created.errors));
    const policy = created.data!.createRetentionPolicy as Policy;
    expect(policy).toMatchObject({ createdBy: OPS, ownerUrn: OPS });
    await waitFor("a run in the owner's name", async () => (await tasksOf(policy.urn)).length > 0, 30_000);
    expect((await tasksOf(policy.urn))[0]).toMatchObject({ createdBy: OPS });

    // OPS leaves (its grant is deleted): the next firing suspends the policy, audited, and shows it.
    await ok("deletePolicy", `mutation($u: String!) { deletePolicy(urn: $u) }`, { u: grantUrn });
    const suspensions = async () =>
      (
        await database.pool.query<{ actor_urn: string; details: Record<string, unknown> }>(
          `SELECT actor_urn, details FROM audit_event WHERE action = 'retentionPolicy.suspended' AND target_urn = $1`,
          [policy.urn],
        )
      ).rows;
    await waitFor("the suspension", async () => (await suspensions()).length > 0, 30_000);
    expect(await suspensions()).toEqual([
      {
        actor_urn: OPS,
        details: { missingPrivileges: ["MANAGE_SYSTEM_OPERATIONS"], trigger: "schedule", via: "retention-schedule" },
      },
    ]);
    expect(await get(policy.urn)).toMatchObject({ ownerUrn: OPS, suspendedAt: expect.any(Number) });
    await waitFor("the runs of before to end", async () =>
      (await tasksOf(policy.urn)).every((t) => ["completed", "failed", "cancelled"].includes(t.state)),
    );
    const before = (await tasksOf(policy.urn)).length;
    // Two more firings start nothing and write nothing.
    const skipped = async () =>
      (await scheduleQueue.getCompleted(0, 10_000)).filter(
        (job) =>
          policy.urn.endsWith((job.data as { policyId: string }).policyId) &&
          (job.returnvalue as { skipped?: string } | null)?.skipped === "SUSPENDED",
      ).length;
    await waitFor("two firings of the suspended policy", async () => (await skipped()) >= 2, 30_000);
    expect(await tasksOf(policy.urn)).toHaveLength(before);
    expect(await suspensions()).toHaveLength(1);

    // The root user resumes it and owns it: the same schedule runs again, in the root user's name.
    const resumed = await ok<Policy>(
      "resumeRetentionPolicy",
      `mutation($u: String!) { resumeRetentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`,
      { u: policy.urn },
    );
    expect(resumed).toMatchObject({ ownerUrn: ROOT, suspendedAt: null });
    await waitFor(
      "a run after the resumption",
      async () => (await tasksOf(policy.urn)).some((t) => t.createdBy === ROOT && t.state === "completed"),
      30_000,
    );
    expect(await remove(policy.urn)).toBe(true);
  }, 120_000);

  it("is driven by mdp retention create|list|update|run|delete", async () => {
    const token = await ok<{ accessToken: string }>(
      "createAccessToken",
      `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: ONE_HOUR, name: "retention cli"}) { accessToken } }`,
    );
    const mdp = (args: string[]) => {
      const { MDP_URL: _u, MDP_TOKEN: _t, ...inherited } = process.env;
      const child = spawn(process.execPath, [MDP, ...args], {
        env: { ...inherited, MDP_URL: urls[0]!, MDP_TOKEN: token.accessToken, HOME: "/nonexistent" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
        child.on("close", (code) => resolve({ code, stdout, stderr })),
      );
    };
    const created = await mdp([
      "--json",
      "retention",
      "create",
      "dataset",
      "operation",
      "--retain-days",
      "5",
      "--cron",
      "0 2 * * *",
    ]);
    expect(created.code).toBe(0);
    const policy = JSON.parse(created.stdout) as Policy;
    expect(policy).toMatchObject({ entityType: "dataset", aspect: "operation", retainDays: 5, cron: "0 2 * * *" });

    const listed = await mdp(["retention", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(policy.urn);
    expect(listed.stdout).toContain("dataset/operation");

    const updated = await mdp(["--json", "retention", "update", policy.urn, "--retain-days", "6"]);
    expect(JSON.parse(updated.stdout)).toMatchObject({ urn: policy.urn, retainDays: 6 });

    const dryRun = await mdp(["retention", "run", policy.urn]);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toContain(await run(policy.urn));

    const badCron = await mdp(["retention", "create", "dataset", "operation", "--retain-days", "5", "--cron", "nope"]);
    expect(badCron.code).toBe(1);
    expect(badCron.stderr).toContain("input.cron");
    const badDays = await mdp([
      "retention",
      "create",
      "dataset",
      "operation",
      "--retain-days",
      "0",
      "--cron",
      "* * * * *",
    ]);
    expect(badDays.code).toBe(1);

    // without a terminal to ask, a deletion needs --yes: refused, the policy still there
    const unconfirmed = await mdp(["retention", "delete", policy.urn]);
    expect(unconfirmed).toMatchObject({ code: 1, stderr: expect.stringContaining("needs --yes") });
    expect(await get(policy.urn)).not.toBeNull();
    const deleted = await mdp(["retention", "delete", policy.urn, "--yes"]);
    expect(deleted.code).toBe(0);
    expect(await get(policy.urn)).toBeNull();
    expect((await mdp(["retention", "delete", policy.urn, "--yes"])).code).toBe(3);
  }, 60_000);

  it("converges: a worker starting re-creates a schedule Redis lost and removes one whose policy is gone", async () => {
    const policy = await create({ entityType: "dataset", aspect: "operation", retainDays: 2, cron: "0 5 * * *" });
    const id = policy.urn.split(":").at(-1)!;
    await schedulersAre(1);
    // As if Redis had refused the upsert after the row was written, and the removal after a row was deleted.
    expect(await scheduleQueue.removeJobScheduler(`retention-policy-${id}`)).toBe(true);
    await scheduleQueue.upsertJobScheduler(
      "retention-policy-00000000-0000-4000-8000-000000000000",
      { pattern: "0 5 * * *", tz: "UTC" },
      { name: "retention", data: { policyId: "00000000-0000-4000-8000-000000000000" } },
    );
    expect((await get(policy.urn))!.nextRunTime).toBeNull();

    const restarted = startService("truncation-worker", env);
    services.push(restarted);
    // It asks for a full sync at its start, which whichever worker takes it runs.
    const schedulers = async () => (await scheduleQueue.getJobSchedulers(0, -1)).map((s) => [s.key, s.pattern]);
    await waitFor("the full sync", async () =>
      isDeepStrictEqual(await schedulers(), [[`retention-policy-${id}`, "0 5 * * *"]]),
    );
    expect((await get(policy.urn))!.nextRunTime).toBeGreaterThan(Date.now());
    await remove(policy.urn);
  }, 60_000);
});
