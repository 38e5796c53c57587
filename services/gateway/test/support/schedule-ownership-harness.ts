/**
 * The gateway and the workers' own schedule firing the schedule ownership tests run against
 * (schedule-ownership-*.int.spec.ts), started in beforeAll and closed in afterAll, and the helpers those tests call.
 * Call it once inside a describe; `gateway` and `runs` are set by the time the tests run.
 */
import { createLogger } from "@mdp/core";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests, type RedisConnection } from "@mdp/queues";
import { fireSchedule, retentionPolicyKind, scheduledTestKind, type FiringDeps } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { ROOT, grant, startGateway, systemClientHeaders, type GraphQLBody, type Harness } from "./gateway-harness";
import { OTHER_MANAGER, definition, CREATE_TEST, TEST, type TestView } from "./schedule-ownership";

export function startScheduleOwnershipHarness() {
  let connection: RedisConnection | undefined;
  let rateLimits: RateLimits | undefined;
  let truncations: Producer<"truncate"> | undefined;
  let syncQueue: Producer<"scheduleSync"> | undefined;
  let deps: FiringDeps;

  const gql = async (query: string, variables: Record<string, unknown>, headers = systemClientHeaders(ROOT)) =>
    (await sched.gateway.graphql(query, variables, headers)).body;
  const ok = async <T>(field: string, query: string, variables: Record<string, unknown>, headers?: object) => {
    const body: GraphQLBody = await gql(query, variables, headers as Record<string, string> | undefined);
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data![field] as T;
  };
  const sched = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    /** The evaluate queue the firings add their runs to (no evaluation worker: the tasks stay waiting). */
    runs: undefined as unknown as Producer<"evaluate">,
    gql,
    ok,
    /** A policy granting `privileges` to `user`; returns its urn, so the grant can be taken away. */
    grantPolicy: (user: string, privileges: string[]) =>
      ok<string>("createPolicy", `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, {
        i: { name: `${user} ${privileges.join(",")}`, state: "ACTIVE", privileges, actors: { users: [user] } },
      }),
    revokePolicy: (urn: string) =>
      ok<boolean>("deletePolicy", `mutation($u: String!) { deletePolicy(urn: $u) }`, { u: urn }),
    createTest: (id: string, cron: string | null, headers: Record<string, string>, actions?: unknown) =>
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
      ),
    viewTest: (urn: string) => ok<TestView>("test", TEST, { urn }),
    tasksOf: async (testUrn: string) =>
      (
        await sched.gateway.database.pool.query<{
          id: string;
          created_by: string;
          created_via: string | null;
          state: string;
        }>(`SELECT id, created_by, created_via, state FROM task WHERE request->>'testUrn' = $1 ORDER BY created_at`, [
          testUrn,
        ])
      ).rows,
    audit: (action: string, targetUrn: string) =>
      sched.gateway.prisma.auditEvent.findMany({ where: { action, targetUrn }, orderBy: { id: "asc" } }),
    /** As if the runs queued so far had finished: the next firing starts a task rather than joining one. */
    finishTasks: () => sched.gateway.database.pool.query(`UPDATE task SET state = 'completed' WHERE state = 'waiting'`),
    /** The workers' own firing runner, as a firing of the test's schedule runs it. */
    fireTest: async (testUrn: string) =>
      (await fireSchedule(scheduledTestKind, testUrn, deps)) as Record<string, unknown>,
    firePolicy: async (policyUrn: string) =>
      (await fireSchedule(retentionPolicyKind, policyUrn.split(":").at(-1)!, deps)) as Record<string, unknown>,
  };

  beforeAll(async () => {
    const h = (sched.gateway = await startGateway({ SCHEDULE_MIN_INTERVAL_SECONDS: "2" }));
    const logger = createLogger("schedule-ownership-test", h.config.LOG_LEVEL);
    connection = createRedis(h.config.REDIS_URL, "producer");
    rateLimits = new RateLimits(RateLimits.connect(h.config, logger), h.config);
    sched.runs = new Producer("evaluate", connection, h.config.QUEUE_PREFIX);
    truncations = new Producer("truncate", connection, h.config.QUEUE_PREFIX);
    syncQueue = new Producer("scheduleSync", connection, h.config.QUEUE_PREFIX);
    // No evaluation or truncation runs: the tasks stay waiting.
    deps = {
      db: h.database,
      tasks: new TaskLifecycle(h.database, logger),
      producers: { evaluate: sched.runs, truncate: truncations },
      sync: new ScheduleSyncRequests(syncQueue),
      logger,
      urnNamespace: h.config.URN_NAMESPACE,
      rootUserUrn: h.config.ROOT_USER_URN,
      rateLimits,
    };
    await grant(h, OTHER_MANAGER, ["MANAGE_TESTS"]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([sched.runs?.close(), truncations?.close(), syncQueue?.close()]);
    await rateLimits?.close();
    if (connection) await closeRedis(connection);
    await sched.gateway?.close();
  });
  return sched;
}
