/**
 * Workers you can watch and logs joined to traces, against the real processes: each worker's (the webhook worker's
 * with its delivery metrics) /health, /ready and /metrics on its own port, job and queue metrics after a truncation and an evaluation, the
 * gateway's metrics labelled by action with bounded values, token refusals counted, and one trace and request id on
 * the gateway's and the worker's log lines for the same truncation.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  monitorUrl,
  startService,
  systemClient,
  uniqueName,
  waitFor,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const ADMIN = "urn:li:corpuser:admin";

type LogLine = Record<string, unknown> & { level: number; msg: string };
const logLines = (service: RunningService): LogLine[] =>
  service
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as LogLine);

/** The value of one series in Prometheus text, e.g. `mdp_jobs_total{queue="truncate-timeseries",outcome="completed"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("watching the services", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let gateway: RunningService;
  let truncation: RunningService;
  let evaluation: RunningService;
  let webhooks: RunningService;
  let baseUrl: string;
  let truncationUrl: string;
  let evaluationUrl: string;
  let webhookUrl: string;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { ...systemClient(ADMIN), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { value?: unknown; data?: unknown } };
  };
  const scrape = async (url: string) => {
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    return res.text();
  };

  beforeAll(async () => {
    db = await createTestDatabase("e2e_observability");
    database = createDatabase(db.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: uniqueName("e2e-observability"), PORT: String(port) };
    gateway = startService("gateway", env);
    truncation = startService("truncation-worker", env);
    evaluation = startService("evaluation-worker", env);
    webhooks = startService("webhook-worker", env);
    [truncationUrl, evaluationUrl, webhookUrl] = await Promise.all([
      monitorUrl(truncation),
      monitorUrl(evaluation),
      monitorUrl(webhooks),
    ]);
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitUntilReady(truncationUrl, truncation),
      waitUntilReady(evaluationUrl, evaluation),
      waitUntilReady(webhookUrl, webhooks),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([gateway, truncation, evaluation, webhooks].filter(Boolean).map((s) => s.stop()));
    await database?.close();
    await db?.drop();
  });

  it("serves /health, /ready and /metrics on each worker's own port, without credentials", async () => {
    const urls = [truncationUrl, evaluationUrl, webhookUrl];
    expect(new Set([...urls, baseUrl].map((url) => new URL(url).port)).size).toBe(4);
    for (const url of urls) {
      const health = await fetch(`${url}/health`);
      expect([health.status, await health.json()]).toEqual([200, { status: "ok" }]);
      const ready = await fetch(`${url}/ready`);
      expect([ready.status, await ready.json()]).toEqual([
        200,
        { ready: true, checks: { postgres: "ok", redis: "ok", worker: "ok" } },
      ]);
      const metrics = await scrape(url);
      expect(metrics).toContain("process_resident_memory_bytes");
      const unknown = await fetch(`${url}/jobs`);
      expect(unknown.status).toBe(404);
    }
    const evaluationMetrics = await scrape(evaluationUrl);
    expect(sample(evaluationMetrics, 'mdp_queue_jobs{queue="evaluate-tests",state="waiting"}')).toBe(0);
    expect(sample(evaluationMetrics, 'mdp_evaluation_requests_total{outcome="evaluated"}')).toBe(0);
    // Webhooks are the webhook worker's alone: its delivery metrics are there, none on the evaluation worker.
    const webhookMetrics = await scrape(webhookUrl);
    expect(sample(webhookMetrics, 'webhook_deliveries_total{outcome="delivered"}')).toBe(0);
    expect(sample(webhookMetrics, "webhook_circuits_open")).toBe(0);
    expect(sample(webhookMetrics, 'mdp_queue_jobs{queue="webhook-chores",state="failed"}')).toBe(0);
    expect(evaluationMetrics).not.toContain("webhook_deliveries_total");
  });

  it("joins a truncation's gateway and worker log lines by trace and request id, and counts the job", async () => {
    const requestId = uniqueName("truncate-request");
    const started = await post(
      "/gms/operations?action=truncateTimeseriesAspect",
      { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1_700_000_000_000, dryRun: false },
      { "x-request-id": requestId },
    );
    expect(started.status).toBe(200);
    const value = started.body.value as string | { taskId: string };
    const taskId = typeof value === "string" ? value : value.taskId;
    await waitFor("the truncation to complete", async () => {
      const status = await post("/gms/operations?action=getTaskStatus", { taskId });
      return (status.body.value as { state?: string }).state === "completed";
    });

    // The gateway's line for the request and the worker's lines for its job: one trace, one request id.
    const requestLine = logLines(gateway).find(
      (l) => l.msg === "request completed" && (l.req as { id?: string } | undefined)?.id === requestId,
    );
    expect(requestLine).toMatchObject({ request_id: requestId, trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(requestLine?.span_id).toMatch(/^[0-9a-f]{16}$/);
    let jobLines: LogLine[] = [];
    await waitFor("the job's end line", async () => {
      jobLines = logLines(truncation).filter((l) => l.request_id === requestId);
      return jobLines.some((l) => l.msg === "job ended");
    });
    const startLine = jobLines.find((l) => l.msg === "job started");
    const endLine = jobLines.find((l) => l.msg === "job ended");
    expect(startLine).toMatchObject({ queue: "truncate-timeseries", attempt: 1, trace_id: requestLine!.trace_id });
    expect(endLine).toMatchObject({
      queue: "truncate-timeseries",
      outcome: "completed",
      durationMs: expect.any(Number),
      trace_id: requestLine!.trace_id,
      span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });

    const metrics = await scrape(truncationUrl);
    expect(sample(metrics, 'mdp_jobs_total{queue="truncate-timeseries",outcome="completed"}')).toBe(1);
    expect(sample(metrics, 'mdp_job_duration_seconds_count{queue="truncate-timeseries"}')).toBe(1);
    expect(sample(metrics, 'mdp_queue_jobs{queue="truncate-timeseries",state="completed"}')).toBe(1);
    expect(sample(metrics, 'mdp_queue_jobs{queue="truncate-timeseries",state="waiting"}')).toBe(0);
  });

  it("counts an evaluation's job, request and test results on the evaluation worker", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.watched,PROD)";
    const proposal = {
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: JSON.stringify({ description: "watched" }) },
    };
    expect((await post("/gms/aspects?action=ingestProposal", { proposal })).status).toBe(200);
    const created = await post("/api/graphql", {
      query: `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
      variables: {
        input: {
          id: "watched",
          name: "Has a description",
          category: "Documentation",
          // The counts below are of this one evaluate: no run of the new test, no evaluation on change.
          evaluateOnChange: false,
          definition: {
            json: "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: exists}]",
          },
        },
      },
    });
    expect(created.body).toEqual({ data: { createTest: "urn:li:test:watched" } });
    const evaluated = await post("/gms/test?action=evaluate", { urn });
    expect(evaluated).toMatchObject({ status: 200, body: { value: { urn, failing: [] } } });

    const metrics = await scrape(evaluationUrl);
    expect(sample(metrics, 'mdp_jobs_total{queue="evaluate-tests",outcome="completed"}')).toBe(1);
    expect(sample(metrics, 'mdp_job_duration_seconds_count{queue="evaluate-tests"}')).toBe(1);
    expect(sample(metrics, 'mdp_evaluation_requests_total{outcome="evaluated"}')).toBe(1);
    expect(sample(metrics, "mdp_entity_evaluations_total")).toBe(1);
    expect(sample(metrics, 'mdp_test_results_total{result="passing"}')).toBe(1);
    expect(sample(metrics, 'mdp_queue_jobs{queue="evaluate-tests",state="active"}')).toBe(0);
  });

  it("labels the gateway's HTTP metrics by action, and a flood of made-up actions adds one series", async () => {
    expect((await post("/gms/operations?action=getIndexSizes", {})).status).toBe(200);
    expect((await post("/api/graphql", { query: "{ __typename }" })).status).toBe(200);
    const before = await (await fetch(`${baseUrl}/metrics`)).text();
    const count = (text: string, labels: string) =>
      sample(text, `http_request_duration_seconds_count{method="POST",route="/gms/operations",${labels}}`);
    expect(count(before, 'action="getIndexSizes",status="200"')).toBe(1);
    expect(count(before, 'action="truncateTimeseriesAspect",status="200"')).toBe(1);
    expect(
      sample(
        before,
        'http_request_duration_seconds_count{method="POST",route="/api/graphql",action="query",status="200"}',
      ),
    ).toBeGreaterThanOrEqual(1);

    const series = (text: string) =>
      text
        .split("\n")
        .filter((l) => l.startsWith("http_request_duration_seconds") && l.includes('route="/gms/operations"'));
    for (let i = 0; i < 50; i++) {
      const res = await post(`/gms/operations?action=made-up-${i}-${Math.random().toString(36).slice(2)}`, {});
      expect(res.status).toBe(400);
    }
    const after = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(after).not.toContain("made-up-");
    expect(count(after, 'action="unknown",status="400"')).toBe(50);
    // the `unknown` action's series: a bucket per bound, _sum and _count, as for any other action
    expect(series(after).length - series(before).length).toBe(
      series(after).filter((l) => l.includes('action="unknown"')).length,
    );
    expect(
      series(after).filter(
        (l) => l.includes('action="unknown"') && l.startsWith("http_request_duration_seconds_count"),
      ),
    ).toHaveLength(1);
  });

  it("counts token verifications by result and reason", async () => {
    const refused = await fetch(`${baseUrl}/gms/operations?action=getIndexSizes`, {
      method: "POST",
      headers: { authorization: "Bearer not-a-token", "content-type": "application/json" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(sample(metrics, 'mdp_token_verifications_total{result="refused",reason="invalid"}')).toBe(1);
    expect(sample(metrics, 'mdp_token_verifications_total{result="refused",reason="expired"}')).toBe(0);
  });

  it("logs the dashboard's polling below info, and its page at info", async () => {
    const created = await post("/api/graphql", {
      query: `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ADMIN}", duration: ONE_DAY, name: "watch"}) { accessToken } }`,
    });
    const token = (created.body.data as { createAccessToken: { accessToken: string } }).createAccessToken.accessToken;
    const basic = { authorization: `Basic ${Buffer.from(`admin:${token}`).toString("base64")}` };
    const poll = await fetch(`${baseUrl}/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10`, {
      headers: basic,
    });
    expect(poll.status).toBe(200);
    const page = await fetch(`${baseUrl}/admin/queues`, { headers: basic });
    expect(page.status).toBe(200);
    await waitFor("the dashboard page's log line", async () =>
      logLines(gateway).some((l) => (l.req as { url?: string } | undefined)?.url === "/admin/queues"),
    );
    const polls = logLines(gateway).filter((l) =>
      String((l.req as { url?: string } | undefined)?.url ?? "").startsWith("/admin/queues/api/"),
    );
    expect(polls).toEqual([]);
  });
});
