/**
 * Retention policies' writes against the real processes: two gateways and two truncation workers on one PostgreSQL and
 * Redis. CRUD and its refusals over GraphQL (the schedule in step with the row; field limits, unknown fields, no-op
 * updates, more than 100 policies), and the same through mdp retention.
 */
import { spawn } from "node:child_process";
import { Queue } from "bullmq";
import { createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, QUEUE_NAMES, type RedisConnection } from "@mdp/queues";
import {
  freePort,
  queuePrefix,
  startService,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";
import { ROOT, REDIS_URL, headers, GraphQLAnswer, Policy, MDP, POLICY_FIELDS } from "../support/retention";

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
});
