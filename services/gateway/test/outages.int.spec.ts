/**
 * PostgreSQL or Redis unreachable (stopped here, on private servers of this test's own): every route answers 503
 * with Retry-After and which server it is, never 500, and recovers once it is back; an evaluation retries through a
 * short PostgreSQL restart, and a task id is handed out only when getTaskStatus can find it.
 */
import { Queue } from "bullmq";
import { OUTAGE_RETRY_AFTER_SECONDS } from "@mdp/core";
import { QUEUE_NAMES } from "@mdp/queues";
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
    queue = new Queue(QUEUE_NAMES.evaluate, { connection: { url: redis.url }, prefix: h.config.QUEUE_PREFIX });
    expect((await ingest()).status).toBe(200);
  }, 50_000);
  afterAll(async () => {
    await Promise.all([pg?.start(), redis?.start()].map((p) => p?.catch(() => undefined)));
    await queue?.close();
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
      const token = await h.graphql(
        CREATE_TOKEN,
        { input: { type: "PERSONAL", actorUrn: ROOT, duration: "ONE_HOUR", name: "outage" } },
        systemClientHeaders(ROOT),
      );
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

  it("an evaluation retries through a PostgreSQL restart and answers", async () => {
    await pg.stop();
    const answer = post("/gms/test?action=evaluate", { urn: DATASET });
    try {
      // The worker's first attempt has failed and its retry waits: the restart now happens under it.
      await waitFor("a failed attempt", async () => ((await queue.getJobCounts("delayed")).delayed ?? 0) > 0);
    } finally {
      await pg.start();
    }
    expect(await answer).toMatchObject({ status: 200, body: { value: { urn: DATASET } } });
  });

  it("an evaluation through an outage longer than its retries is a 503 without a task id nobody could look up", async () => {
    await pg.stop();
    let res: Awaited<ReturnType<typeof post>>;
    try {
      res = await post("/gms/test?action=evaluate", { urn: DATASET });
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
      // TruncationService answers its own 503 ("The task queue is unavailable; nothing was deleted.")
      expect((await post("/gms/operations?action=truncateTimeseriesAspect", truncation(false))).status).toBe(503);
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
