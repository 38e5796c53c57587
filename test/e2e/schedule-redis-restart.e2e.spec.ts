/**
 * A scheduled test across restarts of a Redis without persistence (a server of the test's own, stopped and started:
 * it comes back empty, its job schedulers gone), with the real gateway and evaluation worker. A restart shortly before
 * a firing still runs it, once; an outage across two slots runs the latest once, late, and shows the one before it as
 * missed (Test.schedule.missedRuns, an audit row). The cron fires every 20 s (a per-second pattern: the scheduler's
 * own tests lower the shortest interval), so "10 s before a firing" stands for the 15 s before a minute's.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { eventually } from "@mdp/core/testing";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import {
  freePort,
  queuePrefix,
  startService,
  systemClient,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const EVERY_MS = 20_000;
const CRON = "*/20 * * * * *";
const TEST_URN = "urn:li:test:redis-restart";
const headers = systemClient();

describe("a schedule across Redis restarts that lose its data", () => {
  let redis: PrivateRedis;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let baseUrl: string;
  const services: RunningService[] = [];

  const graphql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
    if (!body.data) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  /** When each of the schedule's runs was created (epoch ms): every firing creates one (nothing to evaluate). */
  const runsCreated = async (): Promise<number[]> => {
    const { rows } = await database.pool.query<{ at: Date }>(
      `SELECT created_at AS at FROM task WHERE type = 'EVALUATE_TESTS' ORDER BY created_at`,
    );
    return rows.map((r) => r.at.getTime());
  };
  const runsIn = async (from: number, to: number) => (await runsCreated()).filter((at) => at >= from && at < to);
  /** The next slot of the cron at least `leadMs` away. */
  const slotAhead = (leadMs: number) => Math.ceil((Date.now() + leadMs) / EVERY_MS) * EVERY_MS;
  /** Resolves at `at` on this clock (the cron's slots are times, not conditions of the system). */
  const at = (when: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, when - Date.now())));
  const logs = () => services.map((s) => `--- ${s.name}\n${s.output().slice(-3000)}`).join("\n");

  beforeAll(async () => {
    redis = await startPrivateRedis();
    db = await createTestDatabase("e2e_schedule_redis");
    database = createDatabase(db.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: queuePrefix("e2e-schedule-redis"),
      SCHEDULE_MIN_INTERVAL_SECONDS: "1",
    };
    const gateway = startService("gateway", { ...env, PORT: String(port) });
    const evaluation = startService("evaluation-worker", env);
    services.push(gateway, evaluation);
    await Promise.all([waitUntilReady(baseUrl, gateway), waitForOutput(evaluation, "worker running")]);
    const definition = JSON.stringify({
      on: { types: ["dataset"] },
      rules: { property: "datasetProperties.description", operator: "exists" },
    });
    await graphql(
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "redis-restart",
          name: "restart",
          category: "Docs",
          definition: { json: definition },
          schedule: { cron: CRON },
        },
      },
    );
    // The schedule has fired once: its slot is recorded, so a later gap is measured from it.
    await eventually("a first firing", async () => (await runsCreated()).length > 0, { timeoutMs: EVERY_MS + 10_000 });
  }, 90_000);

  afterAll(async () => {
    await redis?.restart().catch(() => undefined);
    await Promise.all(services.map((s) => s.stop()));
    await database?.close();
    await redis?.stop();
    await db?.drop();
  });

  it("runs the firing after a restart 10 s before it, exactly once", async () => {
    const slot = slotAhead(12_000);
    await at(slot - 10_000);
    await redis.stop();
    await redis.restart();
    await eventually("the slot's firing", async () => (await runsIn(slot, slot + EVERY_MS)).length > 0, {
      timeoutMs: slot + 8_000 - Date.now(),
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${logs()}`);
    });
    // Once the next slot has fired, the one restarted before counts one run.
    await eventually("the next slot's firing", async () => (await runsIn(slot + EVERY_MS, Infinity)).length > 0, {
      timeoutMs: slot + EVERY_MS + 8_000 - Date.now(),
    });
    expect(await runsIn(slot, slot + EVERY_MS)).toHaveLength(1);
    // Nothing was missed: every slot since the schedule's first ran at its time.
    expect(await graphql(`{ test(urn: "${TEST_URN}") { schedule { missedRuns lastMissedAt } } }`)).toEqual({
      test: { schedule: { missedRuns: 0, lastMissedAt: null } },
    });
  }, 90_000);

  it("runs the latest slot of an outage once, late, and shows the one before it as missed", async () => {
    const first = slotAhead(7_000);
    const second = first + EVERY_MS;
    // The slot before the outage has run (its slot recorded): the gap is measured from it.
    await eventually("the slot before the outage", async () => (await runsIn(first - EVERY_MS, first)).length > 0, {
      timeoutMs: first - 5_000 - Date.now(),
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${logs()}`);
    });
    await at(first - 5_000);
    await redis.stop();
    await at(second + 3_000);
    await redis.restart();
    const late = await eventually(
      "the outage's latest slot, run late",
      async () => {
        const runs = await runsIn(first, second + EVERY_MS);
        return runs.length > 0 ? runs : undefined;
      },
      { timeoutMs: 12_000 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${logs()}`);
    });
    expect(late![0]).toBeGreaterThan(second + 3_000);
    const shown = await graphql(`{ test(urn: "${TEST_URN}") { schedule { missedRuns lastMissedAt } } }`);
    expect(shown).toEqual({ test: { schedule: { missedRuns: 1, lastMissedAt: second } } });
    const { rows: audited } = await database.pool.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_event WHERE action = 'test.schedule.missed' AND target_urn = $1`,
      [TEST_URN],
    );
    expect(audited.map((r) => r.details)).toEqual([
      { missed: 1, ranFor: new Date(second).toISOString(), via: "test-schedule" },
    ]);
    // The slot after the outage fires on its own; the outage's two slots counted one run between them.
    await eventually("the slot after the outage", async () => (await runsIn(second + EVERY_MS, Infinity)).length > 0, {
      timeoutMs: second + EVERY_MS + 8_000 - Date.now(),
    });
    expect(await runsIn(first, second + EVERY_MS)).toHaveLength(1);
  }, 90_000);
});
