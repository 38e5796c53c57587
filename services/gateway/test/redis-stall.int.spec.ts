/**
 * A Redis that stalls rather than refuses (CLIENT PAUSE ALL on a private redis-server of this test's own): a request
 * that queues a job, or looks one up, answers 503 "Redis is unavailable" with Retry-After within the producers'
 * command bound instead of waiting out the stall; the task it names ends failed and no job of it is left to run when
 * Redis resumes.
 */
import { Redis } from "ioredis";
import { OUTAGE_RETRY_AFTER_SECONDS } from "@mdp/core";
import { ENQUEUE_TIMEOUT_MS, Producer } from "@mdp/queues";
import { waitFor } from "../../../test/support/services";
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { startPrivateRedis, type PrivateRedis } from "../../../test/support/private-redis";

const STALL_MS = 8_000;
/** Past the producers' bound (ENQUEUE_TIMEOUT_MS) with room for a machine busy with other test files, and well short
 * of STALL_MS: a request that waited out the stall could not answer within it. */
const ANSWERED_WITHIN_MS = ENQUEUE_TIMEOUT_MS + 3_500;

describe("Redis stalled", () => {
  let redis: PrivateRedis;
  let h: Harness;
  let admin: Redis;
  let producer: Producer<"truncate">;
  let producerConnection: Redis;

  const post = async (path: string, body: unknown) => {
    const started = Date.now();
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...systemClientHeaders(ROOT) },
      body: JSON.stringify(body),
    });
    return {
      ms: Date.now() - started,
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: (await res.json()) as { code?: string; message?: string; value?: unknown; details?: { taskId?: string } },
    };
  };
  /** pauses every client of the private Redis for STALL_MS; resolves once the pause is over */
  const stall = async (): Promise<() => Promise<void>> => {
    await admin.call("CLIENT", "PAUSE", String(STALL_MS), "ALL");
    const over = Date.now() + STALL_MS;
    return async () => {
      await admin.call("CLIENT", "UNPAUSE");
      await waitFor("the pause to end", async () => Date.now() >= over || (await admin.ping()) === "PONG");
    };
  };

  beforeAll(async () => {
    redis = await startPrivateRedis();
    h = await startGateway({ REDIS_URL: redis.url });
    admin = new Redis(redis.url);
    producerConnection = new Redis(redis.url);
    producer = new Producer("truncate", producerConnection, h.config.QUEUE_PREFIX);
  }, 30_000);
  afterAll(async () => {
    await admin?.call("CLIENT", "UNPAUSE").catch(() => undefined);
    await producer?.close(); // a queue leaves the connection it was given open
    producerConnection?.disconnect();
    admin?.disconnect();
    await h?.close();
    await redis?.stop();
  }, 30_000);

  it("truncateTimeseriesAspect answers 503 within the bound; its task ends failed and no job of it runs later", async () => {
    const resume = await stall();
    let res: Awaited<ReturnType<typeof post>>;
    try {
      res = await post("/gms/operations?action=truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: 1,
        dryRun: false,
      });
    } finally {
      await resume();
    }
    expect(res).toMatchObject({
      status: 503,
      retryAfter: String(OUTAGE_RETRY_AFTER_SECONDS),
      body: { code: "SERVICE_UNAVAILABLE", message: "Redis is unavailable; retry shortly." },
    });
    expect(res.ms).toBeLessThan(ANSWERED_WITHIN_MS);
    const taskId = res.body.details?.taskId;
    expect(typeof taskId).toBe("string");
    // The add the stall held ran when Redis resumed, and the removal queued behind it took it back off.
    await waitFor("the late job to be taken off", async () => (await producer.queue.getJob(taskId!)) === undefined);
    expect(await producer.queue.getJobCounts("waiting", "delayed", "active")).toEqual({
      waiting: 0,
      delayed: 0,
      active: 0,
    });
    const status = await post("/gms/operations?action=getTaskStatus", { taskId });
    expect(status.body.value).toMatchObject({
      state: "failed",
      startedAt: null,
      failedReason: "Could not be queued: Redis is unavailable.",
    });
  }, 30_000);

  it("cancelTask of a waiting task ends it cancelled within the bound: the row decides, Redis only loses a job it would skip", async () => {
    // a waiting task: cancelling it asks Redis for its job, to take it off the queue, but does not wait on that
    const queued = await post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: 2,
      dryRun: false,
    });
    expect(queued.status).toBe(200);
    const taskId = queued.body.value;
    expect(typeof taskId).toBe("string");
    const resume = await stall();
    let res: Awaited<ReturnType<typeof post>>;
    try {
      res = await post("/gms/operations?action=cancelTask", { taskId });
    } finally {
      await resume();
    }
    expect(res).toMatchObject({ status: 200, body: { value: { taskId, state: "cancelled" } } });
    expect(res.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  }, 30_000);
});
