/**
 * A schedule's firing (schedule-firing.ts, schedule-slots.ts) on real PostgreSQL and Redis, no worker around it: the
 * firing job claims its cron slot first, so a slot runs once whichever job brings it, and the slots skipped since the
 * last one claimed are counted and audited; then the owner's authority is read at fire time: an owner who lost what
 * the work needs has it suspended (audited) and nothing starts, and a suspended or INACTIVE test starts nothing; an
 * owner over its limit starts nothing (audited); otherwise the owner's run is created and queued, and a second firing
 * while it waits joins it. A row gone or unscheduled has its leftover scheduler handed to the sync.
 */
import { AppError, createLogger } from "@mdp/core";
import { createDatabase, findScheduleSlot, findScheduledTest, insertPolicy, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, Producer, whenReady, type RedisConnection } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import { randomUUID } from "node:crypto";
import { claimSlot, fireSchedule, firingHandler, scheduledTestKind, type FiringDeps } from "../src/index";

const OWNER = "urn:li:corpuser:schedule-owner";
const HOURLY = "0 * * * *";
const HOUR = 3_600_000;

describe("a schedule's firing", () => {
  let testDb: TestDatabase;
  let db: Database;
  let redis: RedisConnection;
  let producer: Producer<"evaluate">;
  let deps: FiringDeps;
  const syncRequests: string[] = [];
  let spent = false;

  beforeAll(async () => {
    testDb = await createTestDatabase("schedule_firing");
    db = createDatabase(testDb.url);
    redis = createRedis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", "producer");
    await whenReady(redis);
    producer = new Producer("evaluate", redis, `{test-${randomUUID()}}`);
    const logger = createLogger("schedule-firing-test", "silent");
    deps = {
      db,
      tasks: new TaskLifecycle(db, logger),
      logger,
      rootUserUrn: "urn:li:corpuser:admin",
      urnNamespace: "li",
      sync: { request: async (_kind, id) => void syncRequests.push(id) },
      // Spent when the test says so, as the gateway's limiter answers then.
      rateLimits: {
        consume: async () => {
          if (spent) throw new AppError("TOO_MANY_REQUESTS", "over", { limit: "testRuns", perMinute: 10 });
        },
      },
      producers: { evaluate: producer },
    };
    await insertPolicy(db.prisma, {
      urn: "urn:li:dataHubPolicy:owner",
      name: "owner",
      state: "ACTIVE",
      privileges: ["MANAGE_TESTS"],
      users: [OWNER],
    });
  });
  afterAll(async () => {
    await producer.close();
    await closeRedis(redis);
    await db.close();
    await testDb.drop();
  });

  /** A scheduled test of OWNER's (`more`: its state, cron, actions...). */
  const scheduledTest = async (id: string, more: Record<string, unknown> = {}) => {
    const urn = `urn:li:test:${id}`;
    const definition = { on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } };
    await db.prisma.metadataTest.create({
      data: {
        urn,
        name: id,
        category: "x",
        definitionText: JSON.stringify(definition),
        definition,
        onTypes: ["dataset"],
        scheduleCron: HOURLY,
        createdBy: OWNER,
        ownerUrn: OWNER,
        ...more,
      },
    });
    return urn;
  };
  const audits = (action: string, targetUrn: string) => db.prisma.auditEvent.findMany({ where: { action, targetUrn } });

  describe("its slot", () => {
    it("runs once whichever job brings it, and counts the slots skipped since the last one claimed", async () => {
      const at = Date.UTC(2026, 0, 1, 10, 30);
      expect(await claimSlot(db.prisma, "scheduledTest", "slots", HOURLY, at)).toEqual({
        claimed: true,
        slotAt: Date.UTC(2026, 0, 1, 10),
        missed: 0,
      });
      // The same slot again (a late firing the sync queued, or the scheduler's): nothing.
      expect(await claimSlot(db.prisma, "scheduledTest", "slots", HOURLY, at + 60_000)).toMatchObject({
        claimed: false,
      });
      // Three hours on: one slot runs, the two between it and the last one claimed were skipped.
      expect(await claimSlot(db.prisma, "scheduledTest", "slots", HOURLY, at + 3 * HOUR)).toEqual({
        claimed: true,
        slotAt: Date.UTC(2026, 0, 1, 13),
        missed: 2,
      });
      // A new cron starts from its own slot, counting nothing skipped.
      expect(await claimSlot(db.prisma, "scheduledTest", "slots", "30 * * * *", at + 3 * HOUR)).toEqual({
        claimed: true,
        slotAt: Date.UTC(2026, 0, 1, 13, 30),
        missed: 0,
      });
      expect(await findScheduleSlot(db.prisma, "scheduledTest", "slots")).toMatchObject({ cron: "30 * * * *" });
    });

    it("delivered twice, starts one run", async () => {
      const urn = await scheduledTest("twice");
      const handler = firingHandler(scheduledTestKind, deps);
      const payload = { testUrn: urn } as Parameters<typeof handler>[0];
      const job = {} as Parameters<typeof handler>[1];
      const first = (await handler(payload, job, undefined)) as { taskId: string };
      expect(first).toEqual({ taskId: expect.any(String), joined: false });
      expect(await handler(payload, job, undefined)).toEqual({ skipped: "SLOT_ALREADY_RAN" });
      expect(
        await db.prisma.task.count({ where: { createdBy: OWNER, request: { path: ["testUrn"], equals: urn } } }),
      ).toBe(1);
    });
  });

  it("starts the owner's run, audited, and a second firing while it waits joins it", async () => {
    const urn = await scheduledTest("runs");
    const fired = await fireSchedule(scheduledTestKind, urn, deps);
    expect(fired).toEqual({ taskId: expect.any(String), joined: false });
    const { taskId } = fired as { taskId: string };
    expect(await deps.tasks.read(taskId)).toMatchObject({
      type: "EVALUATE_TESTS",
      state: "waiting",
      createdBy: OWNER,
      request: { kind: "runTest", testUrn: urn, push: true },
    });
    expect(await producer.getJob(taskId)).toBeDefined();
    expect(await audits("test.run", urn)).toEqual([
      expect.objectContaining({ actorUrn: OWNER, details: expect.objectContaining({ taskId, trigger: "schedule" }) }),
    ]);
    expect(await fireSchedule(scheduledTestKind, urn, deps)).toEqual({ taskId, joined: true });
  });

  it("suspends the work of an owner who lost what it needs, at fire time, and starts nothing after", async () => {
    // Its actions write tags, which the owner may not (MANAGE_TESTS only).
    const definition = {
      on: { types: ["dataset"] },
      rules: { property: "urn", operator: "exists" },
      actions: { passing: [{ type: "ADD_TAGS", params: { values: ["urn:li:tag:t"] } }], failing: [] },
    };
    const urn = await scheduledTest("tagging", { definition, definitionText: JSON.stringify(definition) });
    expect(await fireSchedule(scheduledTestKind, urn, deps)).toEqual({ suspended: ["EDIT_ENTITY_TAGS"] });
    expect((await findScheduledTest(db.prisma, urn))?.suspendedAt).toEqual(expect.any(Date));
    expect(await audits("test.schedule.suspended", urn)).toEqual([expect.objectContaining({ actorUrn: OWNER })]);
    expect(await fireSchedule(scheduledTestKind, urn, deps)).toEqual({ skipped: "SUSPENDED" });
    expect(await audits("test.schedule.suspended", urn)).toHaveLength(1);
    expect(await audits("test.run", urn)).toEqual([]);
  });

  it("starts nothing for an INACTIVE test, nor for an owner over the runTest limit (audited)", async () => {
    const inactive = await scheduledTest("inactive", { state: "INACTIVE" });
    expect(await fireSchedule(scheduledTestKind, inactive, deps)).toEqual({ skipped: "INACTIVE" });
    const limited = await scheduledTest("limited");
    spent = true;
    try {
      expect(await fireSchedule(scheduledTestKind, limited, deps)).toEqual({ rateLimited: "testRuns" });
    } finally {
      spent = false;
    }
    expect(await audits("test.run.rateLimited", limited)).toEqual([
      expect.objectContaining({ actorUrn: OWNER, details: expect.objectContaining({ trigger: "schedule" }) }),
    ]);
    expect(await audits("test.run", limited)).toEqual([]);
  });

  it("hands the scheduler of a row gone or unscheduled to the sync to remove", async () => {
    const unscheduled = await scheduledTest("unscheduled", { scheduleCron: null });
    expect(await fireSchedule(scheduledTestKind, unscheduled, deps)).toEqual({ removalRequested: true });
    expect(await fireSchedule(scheduledTestKind, "urn:li:test:gone", deps)).toEqual({ removalRequested: true });
    expect(syncRequests).toEqual([unscheduled, "urn:li:test:gone"]);
  });
});
