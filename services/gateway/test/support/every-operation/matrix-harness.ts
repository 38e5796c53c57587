/**
 * The gateway both authorization matrix specs run against (authorization-every-operation and
 * authorization-acts-on-others): an evaluation worker, a minter, an ingested entity, and the fixtures rows act on.
 */
import { startEvaluationWorker, type RunningWorker } from "../evaluation-worker";
import { createToken, ROOT, startGateway, systemClientHeaders, type Harness } from "../gateway-harness";
import { ENTITY, MINTER, POLICY_USER, testInput, type Fixtures } from "./principals";

export interface Matrix {
  h: Harness;
  fixtures: Fixtures;
  /** a GraphQL call as the root user, which must succeed: its data */
  asRoot<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  /** a new active policy granting `user` the privileges: its urn */
  grantPolicy(user: string, privileges: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function startMatrix(): Promise<Matrix> {
  const root = systemClientHeaders(ROOT);
  const h = await startGateway({
    RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "1000",
    RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1000",
    MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER: "1000",
  });
  let worker: RunningWorker | undefined;
  const close = async () => {
    await worker?.close();
    await h.close();
  };
  async function asRoot<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const res = await h.graphql(query, variables, root);
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data as T;
  }
  const grantPolicy = async (user: string, privileges: string[]) =>
    (
      await asRoot<{ createPolicy: string }>(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: `matrix ${user}`, state: "ACTIVE", privileges, actors: { users: [user] } },
      })
    ).createPolicy;
  try {
    worker = await startEvaluationWorker(h, 2, { threads: 1 });
    await grantPolicy(MINTER, ["MANAGE_ACCESS_TOKENS"]);
    const ingested = await h.post("/gms/aspects?action=ingestProposal", {
      proposal: {
        entityType: "dataset",
        entityUrn: ENTITY,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
      },
    });
    expect(ingested.status).toBe(200);
    const freshTest = async () =>
      (
        await asRoot<{ createTest: string }>(`mutation($i: CreateTestInput!) { createTest(input: $i) }`, {
          i: testInput(),
        })
      ).createTest;
    const freshRetentionPolicy = async () =>
      (
        await asRoot<{ createRetentionPolicy: { urn: string } }>(
          `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "operation", retainDays: 9, cron: "0 0 1 1 *"}) { urn } }`,
        )
      ).createRetentionPolicy.urn;
    const freshPolicy = () => grantPolicy(POLICY_USER, ["VIEW_TESTS"]);
    const freshServiceAccount = async () =>
      (await asRoot<{ createServiceAccount: { urn: string } }>(`mutation { createServiceAccount(input: {}) { urn } }`))
        .createServiceAccount.urn;
    const truncation = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: 1,
      dryRun: false,
    });
    expect(truncation.status).toBe(200);
    const task = await h.prisma.task.findFirstOrThrow({ where: { type: "TRUNCATE_TIMESERIES" }, select: { id: true } });
    const fixtures: Fixtures = {
      test: await freshTest(),
      freshTest,
      retentionPolicy: await freshRetentionPolicy(),
      freshRetentionPolicy,
      policy: await freshPolicy(),
      freshPolicy,
      group: (await asRoot<{ createGroup: string }>(`mutation { createGroup(input: {name: "matrix"}) }`)).createGroup,
      serviceAccount: await freshServiceAccount(),
      freshServiceAccount,
      truncationTask: task.id,
      ownTokenOf: (caller) => createToken(h, caller.urn),
      harness: h,
    };
    return { h, fixtures, asRoot, grantPolicy, close };
  } catch (error) {
    await close();
    throw error;
  }
}
