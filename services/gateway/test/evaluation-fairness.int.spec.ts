/**
 * Fairness between callers of metadata-test evaluation (real gateway, real worker, real PostgreSQL and Redis): one
 * actor keeps more slow-but-legal evaluations in flight than the worker has threads and job slots; another actor's
 * harmless evaluations keep answering in a small fraction of the time limit (the worker gives each actor at most all
 * threads but one, round-robin, and keeps its last job slot for an actor with none). The slow actor, charged the
 * thread time of each evaluation, is refused with 429 + Retry-After once its evaluation-time budget is spent.
 */
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const EVALUATE = "/gms/test?action=evaluate";
const HOG_USER = "urn:li:corpuser:hog";
const OTHER_USER = "urn:li:corpuser:other";
/** plain data, evaluated in milliseconds */
const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.plain,PROD)";
/** 20,000 tags that the hog test scans for seconds */
const HOG = "urn:li:dataset:(urn:li:dataPlatform:hive,db.hog,PROD)";
const TIME_LIMIT_MS = 3000;
/** the production defaults: 4 threads, 8 jobs at once */
const THREADS = 4;
const JOBS = 8;
/** hog requests kept in flight: more than the threads and as many as the job slots */
const HOG_IN_FLIGHT = 8;

async function post(h: Harness, body: unknown, headers: Record<string, string>) {
  const started = performance.now();
  const res = await fetch(`${h.baseUrl}${EVALUATE}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { code?: string; message?: string; value?: unknown };
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: json,
    ms: performance.now() - started,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe("evaluation fairness between callers", () => {
  let h: Harness;
  let worker: RunningWorker;
  const asRoot = systemClientHeaders(ROOT);
  const hogRequest = { urn: HOG, testUrns: ["urn:li:test:hog"] };
  const harmlessRequest = { urn: DATASET, testUrns: ["urn:li:test:described"] };

  beforeAll(async () => {
    h = await startGateway({
      EVALUATION_TIME_LIMIT_MS: String(TIME_LIMIT_MS),
      // Two refusals at the time limit spend it; ordinary evaluations (ms) never come near.
      RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE: "5",
    });
    worker = await startEvaluationWorker(h, JOBS, { threads: THREADS });
    await grant(h, HOG_USER, ["VIEW_TESTS"]);
    await grant(h, OTHER_USER, ["VIEW_TESTS"]);
    await h.post(
      "/gms/aspects?action=ingestProposal",
      {
        proposal: {
          entityUrn: DATASET,
          entityType: "dataset",
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: JSON.stringify({ description: "plain" }) },
        },
      },
      asRoot,
    );
    // Written straight to the table: 2 MB of tags is more than one ingestion request may carry (1 MiB).
    const tags = Array.from({ length: 20_000 }, (_, i) => ({ tag: `urn:li:tag:${"t".repeat(80)}${i}` }));
    await h.database.pool.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       VALUES ($1, 'globalTags', 0, 'dataset', $2::jsonb, $3)`,
      [HOG, JSON.stringify({ tags }), ROOT],
    );
    const createTest = async (id: string, rules: unknown) => {
      const res = await h.graphql(
        `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
        {
          input: {
            id,
            name: id,
            category: "x",
            definition: { json: JSON.stringify({ on: { types: ["dataset"] }, rules }) },
          },
        },
        asRoot,
      );
      expect(res.body).toEqual({ data: { createTest: `urn:li:test:${id}` } });
    };
    // Legal (within every definition limit) and slow on HOG: 150 × 40 substrings searched in 20,000 tags.
    await createTest("hog", {
      or: Array.from({ length: 150 }, (_, i) => ({
        property: "globalTags.tags.tag",
        operator: "contains_str",
        values: Array.from({ length: 40 }, (_, j) => `${i.toString(36)}!${j.toString(36)}`),
      })),
    });
    await createTest("described", { property: "datasetProperties.description", operator: "exists" });
    // Every thread has loaded its modules.
    await Promise.all(Array.from({ length: THREADS }, () => h.post(EVALUATE, harmlessRequest, asRoot)));
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("answers another actor's evaluations within a fraction of the time limit while one actor keeps slow ones in flight", async () => {
    // The hog acts through the system client (never rate-limited): in the worker it still counts as its user.
    let stop = false;
    let hogAnswered = 0;
    let hogStoppedAtLimit = 0;
    const hogLoop = async () => {
      while (!stop) {
        const res = await post(h, hogRequest, systemClientHeaders(HOG_USER));
        hogAnswered++;
        if (res.status === 400 && res.body.message?.includes("EVALUATION_TIME_LIMIT_MS")) hogStoppedAtLimit++;
      }
    };
    const hogs = Array.from({ length: HOG_IN_FLIGHT }, hogLoop);
    try {
      const token = (await createToken(h, OTHER_USER)).token;
      const latencies: number[] = [];
      // Through a whole round of hog requests stopped at the time limit (their threads replaced), its backlog waiting.
      while (hogAnswered < HOG_IN_FLIGHT || latencies.length < 20) {
        const res = await post(h, harmlessRequest, bearer(token));
        expect(res.status).toBe(200);
        expect(res.body.value).toMatchObject({ passing: [{ test: "urn:li:test:described" }] });
        latencies.push(res.ms);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      console.log(
        `harmless evaluate under a ${HOG_IN_FLIGHT}-in-flight hog (time limit ${TIME_LIMIT_MS} ms): ` +
          `n=${latencies.length} median=${median(latencies).toFixed(1)} ms ` +
          `p90=${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(1)} ms max=${sorted.at(-1)!.toFixed(1)} ms; ` +
          `hog answers ${hogAnswered} (${hogStoppedAtLimit} at the time limit)`,
      );
      // Without fairness each of these waited for a hog request to end (up to the whole limit, a round of them more).
      // Bounds far above what is measured (tens of ms) and far below the limit, for a busy 2-core machine; the single
      // slowest may also meet a replaced thread's start on a saturated machine (one CI run: above half the limit),
      // so it is held to the limit itself and the 90th percentile to half of it.
      expect(median(latencies)).toBeLessThan(300);
      expect(sorted[Math.floor(sorted.length * 0.9)]!).toBeLessThan(TIME_LIMIT_MS / 2);
      expect(sorted.at(-1)!).toBeLessThan(TIME_LIMIT_MS);
      expect(hogStoppedAtLimit).toBeGreaterThan(0);
    } finally {
      stop = true;
      await Promise.all(hogs);
    }
  });

  it("refuses the slow actor with 429 + Retry-After once its evaluation-time budget is spent, and not the others", async () => {
    const hogToken = (await createToken(h, HOG_USER)).token;
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    // Each request holds a thread for seconds (up to the 3 s limit, then refused with 400) and is charged that: the
    // budget (5 s) is spent after two or three.
    for (let i = 0; i < 6 && !refused; i++) {
      const res = await post(h, hogRequest, bearer(hogToken));
      statuses.push(res.status);
      if (res.status === 429) refused = res;
    }
    expect(statuses.length).toBeGreaterThanOrEqual(3);
    expect(statuses.length).toBeLessThanOrEqual(5);
    for (const status of statuses.slice(0, -1)) expect([200, 400]).toContain(status);
    expect(refused).toBeDefined();
    expect(Number(refused!.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused!.retryAfter)).toBeLessThanOrEqual(60);
    expect(refused!.body).toMatchObject({
      code: "TOO_MANY_REQUESTS",
      message: expect.stringContaining(
        "at most 5 seconds of metadata-test evaluation time per minute per actor (RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE)",
      ),
    });
    // A harmless evaluation of the same actor is refused too (the budget is per actor), another actor's is not.
    expect((await post(h, harmlessRequest, bearer(hogToken))).status).toBe(429);
    const other = await post(h, harmlessRequest, bearer((await createToken(h, OTHER_USER)).token));
    expect(other.status).toBe(200);
  });
});
