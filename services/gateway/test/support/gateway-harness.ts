/**
 * An in-process gateway on a real PostgreSQL database and Redis of the test's own (fresh database, unique prefix),
 * listening on a free port, with helpers to call it as different callers.
 */
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { createLogger, DEVELOPMENT_SECRETS, type Config } from "@mdp/core";
import { createDatabase, TimeseriesStore, type Database, type PrismaClient } from "@mdp/db";
import { closeRedis, closeWorker, createRedis, createWorker, whenReady } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import { createTruncateHandler, recordGivenUp } from "truncation-worker";
import { createGateway, type Gateway } from "../../src/app";
import { composeServices, type Connections } from "../../src/composition";
import type { Services } from "../../src/graphql/context";
import { Readiness } from "../../src/readiness";
import { Hs256 } from "../../src/tokens/jwt";
import { hashToken } from "../../src/tokens/token-hash";
import { startTestEnvironment } from "../../../../test/support/test-environment";

export const ROOT = "urn:li:corpuser:admin";

export interface Harness {
  baseUrl: string;
  config: Config;
  prisma: PrismaClient;
  database: Database;
  /** POST a JSON body to an HTTP operation; returns the HTTP status and the parsed body */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: HttpBody }>;
  services: Services;
  /** the gateway's Redis connections (a test may cut one) */
  connections: Connections;
  /** POST a GraphQL document; returns the HTTP status and the parsed body */
  graphql(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: GraphQLBody }>;
  close(): Promise<void>;
}

export interface HttpBody {
  value?: unknown;
  status?: number;
  code?: string;
  message?: string;
}

export interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

export const systemClientHeaders = (actorUrn: string): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID}:${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET}`).toString("base64")}`,
  "x-platform-actor": actorUrn,
});
export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

export async function startGateway(env: Record<string, string> = {}): Promise<Harness> {
  const { config, drop } = await startTestEnvironment("gateway", env);
  const logger = createLogger("gateway-test", config.LOG_LEVEL);
  const database = createDatabase(config.DATABASE_URL, { poolMax: 5 });
  const { prisma } = database;
  const redis = createRedis(config.REDIS_URL, "producer");
  const subscriber = createRedis(config.REDIS_URL, "subscriber");
  const replySubscriber = createRedis(config.REDIS_URL, "subscriber", { connectionName: "mdp-replies" });
  await Promise.all([whenReady(redis), whenReady(subscriber), whenReady(replySubscriber)]);
  const connections = { db: database, redis, subscriber, replySubscriber };
  const composed = await composeServices(config, connections, logger);
  const gateway: Gateway = await createGateway({
    logger,
    authenticator: composed.authenticator,
    services: composed.services,
    http: composed.http,
    queues: composed.queues,
    readiness: new Readiness(prisma, redis, config.DATABASE_URL),
    graphqlExplorer: config.GRAPHQL_EXPLORER,
    keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  });
  await new Promise<void>((resolve) => gateway.server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    config,
    prisma,
    database,
    async post(path, body, headers = systemClientHeaders(ROOT)) {
      const res = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as HttpBody };
    },
    services: composed.services,
    connections,
    async graphql(query, variables = {}, headers = {}) {
      const res = await fetch(`${baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLBody };
    },
    async close() {
      await gateway.stop();
      await composed.stop();
      await Promise.allSettled([
        closeRedis(redis),
        closeRedis(subscriber),
        closeRedis(replySubscriber),
        database.close(),
      ]);
      await drop();
    },
  };
}

/** A token minted directly (as if issued earlier), e.g. one that has already expired. */
export async function mintToken(h: Harness, actorUrn: string, expSeconds: number): Promise<string> {
  const id = randomUUID();
  const token = new Hs256(h.config.TOKEN_SIGNING_KEY).sign({
    sub: actorUrn,
    jti: id,
    type: "PERSONAL",
    iat: expSeconds - 3600,
    exp: expSeconds,
    iss: "metadata-admin",
    ver: 2,
  });
  await h.prisma.accessToken.create({
    data: {
      id,
      name: "minted",
      actorUrn,
      ownerUrn: actorUrn,
      tokenHash: hashToken(token, h.config.TOKEN_SALT),
      expiresAt: new Date(expSeconds * 1000),
    },
  });
  return token;
}

/**
 * Ingests a `datasetProperties` with this description for each dataset urn, in one ingestProposalBatch (as the root
 * user unless `headers` say otherwise): the change most tests of evaluation and events start from. Throws unless 200.
 */
export async function describeDatasets(
  h: Harness,
  urns: readonly string[],
  description: string,
  headers: Record<string, string> = systemClientHeaders(ROOT),
): Promise<void> {
  const proposals = urns.map((urn) => ({
    entityType: "dataset",
    entityUrn: urn,
    aspectName: "datasetProperties",
    changeType: "UPSERT",
    aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
  }));
  const res = await h.post("/gms/aspects?action=ingestProposalBatch", { proposals }, headers);
  if (res.status !== 200) throw new Error(`ingestProposalBatch: ${res.status} ${JSON.stringify(res.body)}`);
}

/** Grants privileges to a user through a policy, as the root user would. */
export async function grant(h: Harness, userUrn: string, privileges: string[]): Promise<void> {
  const res = await h.graphql(
    `mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }`,
    {
      input: {
        name: `grant ${privileges.join(",")} to ${userUrn}`,
        state: "ACTIVE",
        privileges,
        actors: { users: [userUrn] },
      },
    },
    systemClientHeaders(ROOT),
  );
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
}

export const CREATE_TOKEN = `mutation($input: GetAccessTokenInput!) {
  createAccessToken(input: $input) { accessToken metadata { id name description actorUrn ownerUrn expiresAt createdAt } }
}`;

/**
 * Creates a personal token for `actorUrn`, as `asHeaders` (`more`: other input fields, e.g. scopes); returns the token
 * and its id. It lasts a day, or an hour when created with a token: a token created with a token may not outlive it,
 * so the tokens tests create with one made here (an hour, as most do) end within its life.
 */
export async function createToken(
  h: Harness,
  actorUrn: string,
  asHeaders: Record<string, string> = systemClientHeaders(ROOT),
  more: Record<string, unknown> = {},
): Promise<{ token: string; id: string }> {
  const res = await h.graphql(
    CREATE_TOKEN,
    {
      input: {
        type: "PERSONAL",
        actorUrn,
        duration: /^bearer /i.test(asHeaders.authorization ?? "") ? "ONE_HOUR" : "ONE_DAY",
        name: "test token",
        ...more,
      },
    },
    asHeaders,
  );
  const created = res.body.data?.createAccessToken as { accessToken: string; metadata: { id: string } } | undefined;
  if (!created) throw new Error(JSON.stringify(res.body.errors));
  return { token: created.accessToken, id: created.metadata.id };
}

/** A real truncation worker (BullMQ, PostgreSQL) in this process, on the harness's queue prefix. */
export async function startTruncationWorker(
  h: Harness,
  options: { leaseMs?: number } = {},
): Promise<{ close(): Promise<void> }> {
  const connection = createRedis(h.config.REDIS_URL, "worker");
  const logger = createLogger("truncation-worker-test", h.config.LOG_LEVEL);
  const tasks = new TaskLifecycle(h.database, logger, { leaseMs: options.leaseMs });
  const leases = tasks.keepLeases();
  const handler = createTruncateHandler({
    db: h.database,
    tasks,
    store: new TimeseriesStore(h.database.pool),
    logger,
    shutdownSignal: new AbortController().signal,
  });
  const worker = createWorker("truncate", handler, {
    connection,
    prefix: h.config.QUEUE_PREFIX,
    concurrency: 1,
    logger,
    onGivenUp: (payload, _job, reason) => recordGivenUp(tasks, payload.taskId, reason),
  });
  void worker.run();
  await worker.waitUntilReady();
  return {
    close: async () => {
      await closeWorker(worker);
      leases.stop();
      await closeRedis(connection);
    },
  };
}
