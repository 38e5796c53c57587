/**
 * Tasks across a real PostgreSQL restart, with the real gateway and both worker processes on a PostgreSQL server of the
 * test's own (initdb/pg_ctl, never the shared one): `pg_ctl stop -m immediate` (as a crash) mid truncation and mid
 * test run. A running attempt's step waits for the server and goes on, spending no attempt (three restarts of one
 * truncation end it completed, in one attempt, with exact counts), and a cancel asked during or after the outage must
 * end it as cancelled within a few seconds.
 */
import { createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { DAY, loadDay as loadRows, remaining as rowsLeft, ROWS } from "../support/truncation-rows";
import { privatePostgres, type PrivateServer } from "../../services/gateway/test/support/private-servers";
import {
  freePort,
  startService,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  systemClient,
  type RunningService,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const headers = systemClient();
/** How long after PostgreSQL is back a task may take to end: its lease (10 s), a BullMQ retry's backoff, the rest. */
const SETTLE_BOUND_MS = 25_000;
/** How long after PostgreSQL is back a cancel may take to end a task whose attempt died in the outage. */
const CANCEL_BOUND_MS = 8_000;

interface TaskStatus {
  state: string;
  attemptsMade: number;
  failedReason: string | null;
  progress: Record<string, number>;
}

describe("tasks across a PostgreSQL restart", () => {
  let pg: PrivateServer;
  let database: Database;
  let baseUrl: string;
  const services: RunningService[] = [];

  const post = async (action: string, body: unknown) =>
    fetch(`${baseUrl}/gms/operations?action=${action}`, { method: "POST", headers, body: JSON.stringify(body) });
  const status = async (taskId: string) => {
    const res = await post("getTaskStatus", { taskId });
    if (res.status !== 200) throw new Error(`getTaskStatus: ${res.status}`); // 503 while PostgreSQL is down
    return ((await res.json()) as { value: TaskStatus }).value;
  };
  const graphql = async (query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
    if (!body.data) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const until = async (taskId: string, done: (s: TaskStatus) => boolean, timeoutMs: number) => {
    let last: TaskStatus | undefined;
    await waitFor(
      `task ${taskId}`,
      async () => {
        last = await status(taskId);
        return done(last);
      },
      timeoutMs,
    ).catch((error: Error) => {
      const logs = services.map((s) => `--- ${s.name}\n${s.output().slice(-2500)}`).join("\n");
      throw new Error(`${error.message}: ${JSON.stringify(last)}\n${logs}`);
    });
    return last!;
  };
  const ended = (s: TaskStatus) => ["completed", "failed", "cancelled"].includes(s.state);
  /** PostgreSQL stops as a crash would; `during` runs while it is down. */
  const crash = async (during?: () => Promise<void>) => {
    await pg.stop("immediate");
    try {
      await during?.();
    } finally {
      await pg.start();
    }
  };

  const loadDay = (cutoff: number) => loadRows(database.pool, cutoff);
  const remaining = (cutoff: number) => rowsLeft(database.pool, cutoff);
  const truncate = async (cutoff: number) => {
    const res = await post("truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: cutoff,
      dryRun: false,
      batchSize: 100,
    });
    return ((await res.json()) as { value: string }).value;
  };

  beforeAll(async () => {
    pg = await privatePostgres();
    database = createDatabase(pg.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: pg.url, REDIS_URL, QUEUE_PREFIX: uniqueName("e2e-pg-restart"), PORT: String(port) };
    const gateway = startService("gateway", env);
    const truncation = startService("truncation-worker", env);
    const evaluation = startService("evaluation-worker", env);
    services.push(gateway, truncation, evaluation);
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitForOutput(truncation, "worker running"),
      waitForOutput(evaluation, "worker running"),
    ]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await database?.close();
    await pg?.destroy();
  });

  it("a truncation waits out three restarts in one attempt and completes with an exact count", async () => {
    const cutoff = DAY + Math.floor((2 * DAY_MILLIS) / 3);
    const toGo = await loadDay(cutoff);
    const taskId = await truncate(cutoff);
    let deleted = 0;
    for (let restart = 0; restart < 3; restart++) {
      // Each restart once the task has moved on since the last: three outages of one running attempt.
      const seen = deleted;
      const s = await until(taskId, (t) => (t.progress.deleted ?? 0) > seen && t.state === "active", 20_000);
      deleted = s.progress.deleted ?? 0;
      if (deleted >= toGo) break;
      await crash();
    }
    const backAt = Date.now();
    const end = await until(taskId, ended, SETTLE_BOUND_MS);
    expect(Date.now() - backAt).toBeLessThan(SETTLE_BOUND_MS);
    expect(end).toMatchObject({ state: "completed", progress: { deleted: toGo, toDelete: toGo, percent: 100 } });
    // An outage spends no attempt: the step it cut off waited for the server and went on.
    expect(end.attemptsMade).toBe(1);
    expect(await remaining(cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
  }, 90_000);

  it("a cancel asked during the outage is refused with a 503; asked again after, it ends the truncation at once", async () => {
    const cutoff = DAY + Math.floor(DAY_MILLIS / 2);
    const toGo = await loadDay(cutoff);
    const taskId = await truncate(cutoff);
    await until(taskId, (s) => s.progress.deleted! > 0 && s.state === "active", 20_000);
    await crash(async () => {
      expect((await post("cancelTask", { taskId })).status).toBe(503);
    });
    const backAt = Date.now();
    let answer: Response | undefined;
    await waitFor("cancelTask to be answered", async () => (answer = await post("cancelTask", { taskId })).ok);
    expect(answer!.status).toBe(200);
    const end = await until(taskId, ended, CANCEL_BOUND_MS);
    expect(Date.now() - backAt).toBeLessThan(CANCEL_BOUND_MS);
    const deleted = end.progress.deleted!;
    expect(end).toMatchObject({
      state: "cancelled",
      failedReason: `Cancelled; ${deleted} rows were deleted before the cancellation`,
    });
    expect(deleted).toBeLessThan(toGo);
    expect(await remaining(cutoff)).toEqual({ older: toGo - deleted, newer: ROWS - toGo });
  }, 60_000);

  const N = 2_000;
  let testUrn: string | undefined;
  /** N datasets, half of them described, and a test that they are; a run of it in batches of 10, not pushing. */
  const startRun = async () => {
    if (!testUrn) {
      await database.pool.query(
        `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
         SELECT 'urn:li:dataset:(urn:li:dataPlatform:hive,faults.t' || lpad(i::text, 5, '0') || ',PROD)',
                'datasetProperties', 0, 'dataset',
                CASE WHEN i % 2 = 0 THEN '{"description": "even"}' ELSE '{"name": "odd"}' END::jsonb,
                'urn:li:corpuser:admin'
           FROM generate_series(1, $1::int) AS i`,
        [N],
      );
      const definition = JSON.stringify({
        on: { types: ["dataset"] },
        rules: { property: "datasetProperties.description", operator: "exists" },
      });
      testUrn = (
        await graphql(
          `
            mutation ($input: CreateTestInput!) {
              createTest(input: $input)
            }
          `,
          {
            input: { id: "faults-described", name: "described", category: "Quality", definition: { json: definition } },
          },
        )
      ).createTest as string;
    }
    const run = await graphql(
      `
        mutation ($urn: String!) {
          runTest(urn: $urn, push: false, batchSize: 10)
        }
      `,
      {
        urn: testUrn,
      },
    );
    const taskId = run.runTest as string;
    await until(taskId, (s) => s.progress.evaluated! > 0 && s.state === "active", 20_000);
    return taskId;
  };

  it("a test run resumes after the restart and completes, every entity evaluated once", async () => {
    const taskId = await startRun();
    await crash();
    const backAt = Date.now();
    const end = await until(taskId, ended, SETTLE_BOUND_MS);
    expect(Date.now() - backAt).toBeLessThan(SETTLE_BOUND_MS);
    expect(end).toMatchObject({
      state: "completed",
      progress: { evaluated: N, total: N, passing: N / 2, failing: N / 2, batches: N / 10, percent: 100 },
    });
    expect(end.attemptsMade).toBe(1);
  }, 60_000);

  it("a cancel asked after the outage ends a test run at once, saying how far it got", async () => {
    const taskId = await startRun();
    await crash();
    const backAt = Date.now();
    await waitFor("cancelTask to be answered", async () => (await post("cancelTask", { taskId })).ok);
    const end = await until(taskId, ended, CANCEL_BOUND_MS);
    expect(Date.now() - backAt).toBeLessThan(CANCEL_BOUND_MS);
    expect(end).toMatchObject({
      state: "cancelled",
      failedReason: `Cancelled; ${end.progress.evaluated} entities were evaluated`,
    });
    expect(end.progress.evaluated).toBeLessThan(N);
    expect(end.progress.evaluated).toBe(end.progress.batches! * 10); // exact: no batch counted twice or lost
  }, 60_000);
});
