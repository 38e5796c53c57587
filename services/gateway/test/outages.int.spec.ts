/**
 * PostgreSQL or Redis unreachable (stopped here, on private servers of this test's own): every route answers 503
 * with Retry-After and which server it is, never 500, and recovers once it is back; an evaluation retries through a
 * short PostgreSQL restart, and a task id is handed out only when getTaskStatus can find it.
 */
import { Queue } from "bullmq";
import { OUTAGE_RETRY_AFTER_SECONDS } from "@mdp/core";
import { closeRedis, createRedis, QUEUE_NAMES, type RedisConnection } from "@mdp/queues";
import { waitFor } from "../../../test/support/services";
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { CREATE_TOKEN, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { privatePostgres, privateRedis, type PrivateServer } from "./support/private-servers";

const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
const PG_DOWN = "PostgreSQL is unavailable; retry shortly.";
const REDIS_DOWN = "Redis is unavailable; retry shortly.";

describe("outages", () => {
  let pg: PrivateServer;
  let redis: PrivateServer;
  let h: Harness;
  let worker: RunningWorker;
  let queue: Queue;
  let queueConnection: RedisConnection;

  /** POST with the response's Retry-After */
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(ROOT) },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: (await res.json()) as {
        value?: unknown;
        code?: string;
        message?: string;
        details?: Record<string, unknown>;
      },
    };
  };
  /** GraphQL over HTTP, with the response's status and Retry-After (the harness's helper drops the headers) */
  const graphql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${h.baseUrl}/api/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(ROOT) },
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: (await res.json()) as {
        data?: Record<string, unknown> | null;
        errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
      },
    };
  };
  const taskStatus = async (taskId: unknown) =>
    (await post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;
  const unavailable = (message: string) => ({
    status: 503,
    retryAfter: String(OUTAGE_RETRY_AFTER_SECONDS),
    body: { code: "SERVICE_UNAVAILABLE", message },
  });
  const ingest = () =>
    post("/gms/aspects?action=ingestProposal", {
      proposal: {
        entityType: "dataset",
        entityUrn: DATASET,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: '{"description":"orders"}' },
      },
    });
  const truncation = (dryRun: boolean) => ({
    entityType: "dataset",
    aspect: "datasetProfile",
    endTimeMillis: 1,
    dryRun,
  });

  beforeAll(async () => {
    [pg, redis] = await Promise.all([privatePostgres(), privateRedis()]);
    h = await startGateway({ DATABASE_URL: pg.url, REDIS_URL: redis.url });
    worker = await startEvaluationWorker(h);
    const created = await graphql(
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "outage-run",
          name: "outage run",
          category: "Quality",
          definition: {
            json: '{"on":{"types":["dataset"]},"rules":{"property":"datasetProperties.description","operator":"exists"}}',
          },
        },
      },
    );
    expect(created.body.errors).toBeUndefined();
    // A connection of ours rather than options: a queue's own connection has BullMQ's reconnect delay (up to 20 s),
    // and closed while it waits, ioredis left a 2 s timer on its dead socket after close had returned (closeRedis waits
    // for the reconnect, which ioredis's delay, at most 2 s, lets come).
    queueConnection = createRedis(redis.url, "worker");
    queue = new Queue(QUEUE_NAMES.evaluate, { connection: queueConnection, prefix: h.config.QUEUE_PREFIX });
    // Its connection is refused while this file stops Redis: heard here, so BullMQ prints no console.error block.
    queue.on("error", () => undefined);
    expect((await ingest()).status).toBe(200);
  }, 50_000);
  afterAll(async () => {
    await Promise.all([pg?.start(), redis?.start()].map((p) => p?.catch(() => undefined)));
    await queue?.close(); // leaves the connection it was given open
    if (queueConnection) await closeRedis(queueConnection);
    await worker?.close();
    await h?.close();
    await Promise.all([pg?.destroy(), redis?.destroy()]);
  }, 30_000);

  it("PostgreSQL stopped: HTTP operations and GraphQL say so with 503 and Retry-After, then recover", async () => {
    await pg.stop();
    try {
      expect(await post("/gms/operations?action=getIndexSizes", {})).toMatchObject(unavailable(PG_DOWN));
      expect(await post("/gms/operations?action=truncateTimeseriesAspect", truncation(true))).toMatchObject(
        unavailable(PG_DOWN),
      );
      expect(await post("/gms/operations?action=truncateTimeseriesAspect", truncation(false))).toMatchObject(
        unavailable(PG_DOWN),
      );
      expect(await ingest()).toMatchObject(unavailable(PG_DOWN));
      expect(await post("/gms/operations?action=getTaskStatus", { taskId: "t" })).toMatchObject(unavailable(PG_DOWN));
      // GraphQL: an operation whose only errors are outages is a 503 with Retry-After too, not a 200
      const token = await graphql(CREATE_TOKEN, {
        input: { type: "PERSONAL", actorUrn: ROOT, duration: "ONE_HOUR", name: "outage" },
      });
      expect(token).toMatchObject({ status: 503, retryAfter: String(OUTAGE_RETRY_AFTER_SECONDS) });
      expect(token.body.errors?.[0]).toMatchObject({
        message: PG_DOWN,
        extensions: { code: "SERVICE_UNAVAILABLE", details: { retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS } },
      });
    } finally {
      await pg.start();
    }
    await waitFor("getIndexSizes to answer again", async () => {
      return (await post("/gms/operations?action=getIndexSizes", {})).status === 200;
    });
    expect((await ingest()).status).toBe(200);
  });

  /**
   * POSTs an evaluation that is queued while PostgreSQL is up, then stops PostgreSQL before a worker takes it: the
   * outage meets the worker's attempts, never the gateway's checks before the job (which read PostgreSQL whenever the
   * invalidation channel is late, as it is on a loaded machine: the request would then be refused before any job).
   */
  const evaluationQueuedBeforeOutage = async () => {
    await queue.pause();
    const answer = post("/gms/test?action=evaluate", { urn: DATASET });
    try {
      // a paused queue's jobs wait in its wait list
      await waitFor(
        "the evaluation's job to be queued",
        async () => ((await queue.getJobCounts("wait")).wait ?? 0) > 0,
      );
      await pg.stop();
    } finally {
      await queue.resume();
    }
    return { answer }; // not the promise itself: an async function's caller would wait for the answer
  };

  it("an evaluation retries through a PostgreSQL restart and answers", async () => {
    let answer: ReturnType<typeof post>;
    try {
      ({ answer } = await evaluationQueuedBeforeOutage());
      // The worker's first attempt has failed and its retry waits: the restart now happens under it.
      await waitFor("a failed attempt", async () => ((await queue.getJobCounts("delayed")).delayed ?? 0) > 0);
    } finally {
      await pg.start();
    }
    expect(await answer).toMatchObject({ status: 200, body: { value: { urn: DATASET } } });
  });

  it("an evaluation through an outage longer than its retries is a 503 without a task id nobody could look up", async () => {
    let res: Awaited<ReturnType<typeof post>>;
    try {
      res = await (await evaluationQueuedBeforeOutage()).answer;
    } finally {
      await pg.start();
    }
    expect(res).toMatchObject(unavailable(PG_DOWN));
    expect(res.body.details?.taskId).toBeUndefined();
  }, 30_000);

  it("Redis stopped: evaluation and truncation tasks say so with 503 and Retry-After, then recover", async () => {
    await redis.stop();
    try {
      expect(await post("/gms/test?action=evaluate", { urn: DATASET })).toMatchObject(unavailable(REDIS_DOWN));
      // A truncation's task row is written before its job: the job cannot be queued, so the row ends failed, saying
      // why, and the caller gets its id to look it up (PostgreSQL is up).
      const truncate = await post("/gms/operations?action=truncateTimeseriesAspect", truncation(false));
      expect(truncate).toMatchObject(unavailable(REDIS_DOWN));
      expect(await taskStatus(truncate.body.details?.taskId)).toMatchObject({
        type: "TRUNCATE_TIMESERIES",
        state: "failed",
        failedReason: "Could not be queued: Redis is unavailable.",
      });
      // runTest alike, over GraphQL: 503 with Retry-After, and a failed task row rather than one waiting forever
      const run = await graphql(
        `
          mutation ($urn: String!) {
            runTest(urn: $urn)
          }
        `,
        { urn: "urn:li:test:outage-run" },
      );
      expect(run).toMatchObject({ status: 503, retryAfter: String(OUTAGE_RETRY_AFTER_SECONDS) });
      expect(run.body.errors?.[0]).toMatchObject({
        message: REDIS_DOWN,
        extensions: { code: "SERVICE_UNAVAILABLE", details: { taskId: expect.any(String) } },
      });
      const runTask = (run.body.errors?.[0]?.extensions?.details as { taskId: string }).taskId;
      expect(await taskStatus(runTask)).toMatchObject({
        type: "EVALUATE_TESTS",
        state: "failed",
        failedReason: "Could not be queued: Redis is unavailable.",
      });
    } finally {
      await redis.start();
    }
    await waitFor(
      "evaluate to answer again",
      async () => (await post("/gms/test?action=evaluate", { urn: DATASET })).status === 200,
      20_000,
    );
  });
});
