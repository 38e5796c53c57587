/**
 * Retention policies' runs against the real processes: two gateways and two truncation workers on one PostgreSQL and
 * Redis. A dry run answers truncateTimeseriesAspect's own report; a manual run is an ordinary truncation task with exact
 * counts; a schedule every second runs by itself through a worker, never twice at once however many replicas; deleting
 * the policy removes its schedule; a policy whose owner lost MANAGE_SYSTEM_OPERATIONS is suspended (audited) and starts
 * nothing until a holder resumes it; a worker starting converges the schedules with the rows.
 */
import { isDeepStrictEqual } from "node:util";
import { bulkLoad, DAY_MILLIS } from "@mdp/db";
import { startService, systemClient, waitFor } from "../support/services";
import { ROOT, headers, GraphQLAnswer, Policy, TaskStatus, POLICY_FIELDS } from "../support/retention";
import { startRetentionHarness } from "../support/retention-harness";

describe("retention policies (two gateways, two truncation workers)", () => {
  const harness = startRetentionHarness();
  const { services, urls, ok, create, get, remove, run, schedulersAre } = harness;

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
    const { rows } = await harness.database.pool.query<{ id: string }>(
      `SELECT id FROM task WHERE request->>'retentionPolicy' = $1 ORDER BY created_at`,
      [urn],
    );
    return Promise.all(rows.map((r) => status(r.id)));
  };

  it("dry-runs with truncateTimeseriesAspect's report, then runs as a truncation task with exact counts", async () => {
    const now = Date.now();
    // 1,000 rows 30 to 21 days old, 500 from 4 days ago to the end of today: a 10-day policy deletes exactly the first.
    await bulkLoad(harness.database.pool, {
      entityType: "dataset",
      aspectName: "datasetProfile",
      rows: 1000,
      days: 10,
      endMillis: now - 21 * DAY_MILLIS,
      urns: 10,
    });
    await bulkLoad(harness.database.pool, {
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
    const { rows } = await harness.database.pool.query<{ action: string; target_urn: string }>(
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
    await bulkLoad(harness.database.pool, {
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
    const { rows: audit } = await harness.database.pool.query<{ task_id: string; via: string }>(
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
        await harness.database.pool.query<{ actor_urn: string; details: Record<string, unknown> }>(
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
      (await harness.scheduleQueue.getCompleted(0, 10_000)).filter(
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

  it("converges: a worker starting re-creates a schedule Redis lost and removes one whose policy is gone", async () => {
    const policy = await create({ entityType: "dataset", aspect: "operation", retainDays: 2, cron: "0 5 * * *" });
    const id = policy.urn.split(":").at(-1)!;
    await schedulersAre(1);
    // As if Redis had refused the upsert after the row was written, and the removal after a row was deleted.
    expect(await harness.scheduleQueue.removeJobScheduler(`retention-policy-${id}`)).toBe(true);
    await harness.scheduleQueue.upsertJobScheduler(
      "retention-policy-00000000-0000-4000-8000-000000000000",
      { pattern: "0 5 * * *", tz: "UTC" },
      { name: "retention", data: { policyId: "00000000-0000-4000-8000-000000000000" } },
    );
    expect((await get(policy.urn))!.nextRunTime).toBeNull();

    const restarted = startService("truncation-worker", harness.env);
    services.push(restarted);
    // It asks for a full sync at its start, which whichever worker takes it runs.
    const schedulers = async () => (await harness.scheduleQueue.getJobSchedulers(0, -1)).map((s) => [s.key, s.pattern]);
    await waitFor("the full sync", async () =>
      isDeepStrictEqual(await schedulers(), [[`retention-policy-${id}`, "0 5 * * *"]]),
    );
    expect((await get(policy.urn))!.nextRunTime).toBeGreaterThan(Date.now());
    await remove(policy.urn);
  }, 60_000);
});
