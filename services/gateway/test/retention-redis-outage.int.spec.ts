/**
 * Retention policies while Redis (a private server of this test's own, stopped here) is unreachable: the row is the
 * source of truth, so createRetentionPolicy and updateRetentionPolicy still succeed, showing nextRunTime null, rather
 * than committing the row and answering an error a client would retry into a duplicate.
 */
import { startGateway, ROOT, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { privateRedis, type PrivateServer } from "./support/private-servers";

const FIELDS = "urn cron retainDays nextRunTime";
interface View {
  urn: string;
  cron: string;
  retainDays: number;
  nextRunTime: number | null;
}

describe("retention policies with Redis unreachable", () => {
  let redis: PrivateServer;
  let h: Harness;
  const gql = (query: string, variables: Record<string, unknown> = {}) =>
    h.graphql(query, variables, systemClientHeaders(ROOT));

  beforeAll(async () => {
    redis = await privateRedis();
    h = await startGateway({ REDIS_URL: redis.url });
  }, 30_000);
  afterAll(async () => {
    await redis?.start().catch(() => undefined);
    await h?.close();
    await redis?.destroy();
  }, 30_000);

  it("creates and updates a policy, showing no next run, and the one row is listed once", async () => {
    const up = await gql(
      `mutation($input: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $input) { ${FIELDS} } }`,
      {
        input: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 3 * * *" },
      },
    );
    expect(up.body.errors).toBeUndefined();
    // with Redis up, the schedule is there and says when it fires
    expect((up.body.data!.createRetentionPolicy as View).nextRunTime).toEqual(expect.any(Number));

    await redis.stop();
    const created = await gql(
      `mutation($input: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $input) { ${FIELDS} } }`,
      { input: { entityType: "dataset", aspect: "operation", retainDays: 7, cron: "0 4 * * *" } },
    );
    expect(created.body.errors).toBeUndefined();
    const view = created.body.data!.createRetentionPolicy as View;
    expect(view).toMatchObject({ retainDays: 7, cron: "0 4 * * *", nextRunTime: null });

    const updated = await gql(
      `mutation($urn: String!, $input: UpdateRetentionPolicyInput!) { updateRetentionPolicy(urn: $urn, input: $input) { ${FIELDS} } }`,
      { urn: view.urn, input: { retainDays: 8 } },
    );
    expect(updated.body.errors).toBeUndefined();
    expect(updated.body.data!.updateRetentionPolicy).toMatchObject({ urn: view.urn, retainDays: 8, nextRunTime: null });

    const listed = await gql(`{ listRetentionPolicies(input: {}) { retentionPolicies { ${FIELDS} } } }`);
    expect(listed.body.errors).toBeUndefined();
    const policies = (listed.body.data!.listRetentionPolicies as { retentionPolicies: View[] }).retentionPolicies;
    expect(policies.filter((p) => p.urn === view.urn)).toEqual([{ ...view, retainDays: 8 }]);
    expect(policies).toHaveLength(2);
  }, 60_000);
});
