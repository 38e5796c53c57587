/**
 * The processes the retention e2e tests run against (test/e2e/retention-*.e2e.spec.ts): two gateways and two
 * truncation workers on one test database and Redis, started in beforeAll and stopped in afterAll, and the GraphQL
 * helpers those tests call. Call it once inside a describe; the handles are set by the time the tests run.
 */
import { Queue } from "bullmq";
import { createDatabase, type Database } from "@mdp/db";
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
} from "./services";
import { REDIS_URL, headers, type GraphQLAnswer, type Policy, POLICY_FIELDS } from "./retention";

export interface RetentionHarness {
  db: Awaited<ReturnType<typeof createTestDatabase>>;
  database: Database;
  redis: RedisConnection;
  scheduleQueue: Queue;
  services: RunningService[];
  /** The two gateways' base URLs. */
  urls: string[];
  /** The environment the workers were started with. */
  env: Record<string, string>;
  graphql: (query: string, variables?: Record<string, unknown>, url?: string) => Promise<GraphQLAnswer>;
  /** The field of a query's data, throwing on any error. */
  ok: <T>(field: string, query: string, variables?: Record<string, unknown>, url?: string) => Promise<T>;
  create: (input: Record<string, unknown>, url?: string) => Promise<Policy>;
  get: (urn: string) => Promise<Policy | null>;
  remove: (urn: string, url?: string) => Promise<boolean>;
  run: (urn: string, dryRun?: boolean) => Promise<string>;
  /** The schedule sync (a worker's job, asked for by each write) has made the schedulers this many. */
  schedulersAre: (count: number) => Promise<void>;
}

export function startRetentionHarness(): RetentionHarness {
  const services: RunningService[] = [];
  const urls: string[] = [];
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
  const h: RetentionHarness = {
    // Set in beforeAll below, before any test reads them.
    db: undefined!,
    database: undefined!,
    redis: undefined!,
    scheduleQueue: undefined!,
    env: {},
    services,
    urls,
    graphql,
    ok,
    create: (input, url) =>
      ok<Policy>(
        "createRetentionPolicy",
        `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { ${POLICY_FIELDS} } }`,
        { i: input },
        url,
      ),
    get: (urn) =>
      ok<Policy | null>("retentionPolicy", `query($u: String!) { retentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`, {
        u: urn,
      }),
    remove: (urn, url) =>
      ok<boolean>("deleteRetentionPolicy", `mutation($u: String!) { deleteRetentionPolicy(urn: $u) }`, { u: urn }, url),
    run: (urn, dryRun) =>
      ok<string>(
        "runRetentionPolicy",
        dryRun === undefined
          ? `mutation($u: String!) { runRetentionPolicy(urn: $u) }`
          : `mutation($u: String!, $d: Boolean) { runRetentionPolicy(urn: $u, dryRun: $d) }`,
        { u: urn, d: dryRun },
      ),
    schedulersAre: (count) =>
      waitFor(`${count} retention schedulers`, async () => (await h.scheduleQueue.getJobSchedulersCount()) === count),
  };

  beforeAll(async () => {
    h.db = await createTestDatabase("e2e_retention");
    h.database = createDatabase(h.db.url);
    const prefix = queuePrefix("e2e-retention");
    // A per-second cron in the tests: the scheduler's own tests lower the shortest interval between firings.
    // More schedules than the 100 policies the limit's test creates, all owned by the root user.
    h.env = {
      DATABASE_URL: h.db.url,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      MAX_SCHEDULES_PER_USER: "200",
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      urls.push(`http://127.0.0.1:${port}`);
      services.push(startService("gateway", { ...h.env, PORT: String(port) }));
      services.push(startService("truncation-worker", h.env));
    }
    await Promise.all(
      services.map((s, i) =>
        s.name === "gateway" ? waitUntilReady(urls[i / 2]!, s) : waitForOutput(s, "worker running"),
      ),
    );
    h.redis = createRedis(REDIS_URL, "producer");
    h.scheduleQueue = new Queue(QUEUE_NAMES.retention, { connection: h.redis, prefix });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await h.scheduleQueue?.close();
    if (h.redis) await closeRedis(h.redis);
    await h.database?.close();
    await h.db?.drop();
  });
  return h;
}
