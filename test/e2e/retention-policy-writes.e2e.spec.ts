/**
 * Retention policies' writes against the real processes: two gateways and two truncation workers on one PostgreSQL and
 * Redis. CRUD and its refusals over GraphQL (the schedule in step with the row; field limits, unknown fields, no-op
 * updates, more than 100 policies), and the same through mdp retention.
 */
import { spawn } from "node:child_process";
import { DAY_MILLIS } from "@mdp/db";
import { ROOT, Policy, MDP, POLICY_FIELDS } from "../support/retention";
import { startRetentionHarness } from "../support/retention-harness";

describe("retention policies (two gateways, two truncation workers)", () => {
  const harness = startRetentionHarness();
  const { urls, graphql, ok, create, get, remove, run, schedulersAre } = harness;

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

    const { rows } = await harness.database.pool.query<{ action: string }>(
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
