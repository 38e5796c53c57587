/**
 * DataHub's metadata tests UI (docs/datahub-clients.md) against the real gateway and an evaluation worker (PostgreSQL,
 * Redis, BullMQ): runTests and Test.batchRunEvents, as tests-ui-inferred.graphql writes them (fixtures/datahub/).
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests } from "@mdp/queues";
import { fireSchedule, scheduledTestKind } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { UI, DESCRIBED, BARE, CHART, VIEWER, MANAGER, definition, HAS_DESCRIPTION } from "./support/datahub-tests-ui";
import { startTestsUiHarness } from "./support/datahub-tests-ui-harness";

describe("DataHub's metadata tests UI operations", () => {
  const ui = startTestsUiHarness();
  const { asRoot, frontend, createTest, runTest } = ui;

  describe("runTests and Test.batchRunEvents", () => {
    it("evaluates and pushes every ACTIVE test of the entity; true only when none fails", async () => {
      const described = await createTest("ui-described", HAS_DESCRIPTION);
      const tagged = await createTest(
        "ui-tagged",
        definition({ property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:other"] }),
      );
      const res = await ui.gateway.graphql(UI.runTests!, { urn: BARE }, frontend(MANAGER));
      expect(res.body).toEqual({ data: { runTests: false } });
      const stored = await ui.gateway.graphql(
        `query($u: String!) { testResults(urn: $u) { passing { test { urn } } failing { test { urn } } } }`,
        { u: BARE },
        asRoot,
      );
      expect(stored.body.data!.testResults).toMatchObject({
        passing: expect.arrayContaining([{ test: { urn: tagged } }]),
        failing: expect.arrayContaining([{ test: { urn: described } }]),
      });
      // DESCRIBED passes ui-described, and fails ui-tagged.
      expect((await ui.gateway.graphql(UI.runTests!, { urn: DESCRIBED }, frontend(MANAGER))).body).toEqual({
        data: { runTests: false },
      });
      // The one ACTIVE test of charts (the smoke test, edited to them above) passes.
      expect((await ui.gateway.graphql(UI.runTests!, { urn: CHART }, frontend(MANAGER))).body).toEqual({
        data: { runTests: true },
      });
      // Pushing needs MANAGE_TESTS.
      expect(
        (await ui.gateway.graphql(UI.runTests!, { urn: DESCRIBED }, frontend(VIEWER))).body.errors?.[0],
      ).toMatchObject({
        extensions: { code: "FORBIDDEN" },
      });
      // The UI's summary of the test follows the pushes.
      const summary = await ui.gateway.graphql(UI.getTestResultsSummary!, { urn: described }, frontend(VIEWER));
      expect(summary.body).toEqual({
        data: { test: { urn: described, results: { passingCount: 1, failingCount: 1 } } },
      });
    });

    it("lists the test's completed pushed runs newest first, with their counts; a dry run is not one", async () => {
      const urn = await createTest("ui-events", HAS_DESCRIPTION);
      const events = async (variables: Record<string, unknown> = {}) =>
        ui.gateway.graphql(UI.getTestRunEvents!, { urn, ...variables }, frontend(VIEWER));
      expect((await events()).body.data).toEqual({ test: { urn, batchRunEvents: { batchRunEvents: [] } } });

      const before = Date.now();
      await runTest(urn, true);
      await runTest(urn, false);
      await runTest(urn, true);
      const answer = (await events()).body.data!.test as {
        batchRunEvents: { batchRunEvents: Array<{ timestampMillis: number; status: string; result: unknown }> };
      };
      const list = answer.batchRunEvents.batchRunEvents;
      expect(list).toHaveLength(2);
      for (const event of list) {
        // HOG, DESCRIBED pass (described); BARE fails.
        expect(event).toMatchObject({ status: "COMPLETE", result: { passingCount: 2, failingCount: 1 } });
        expect(event.timestampMillis).toBeGreaterThanOrEqual(before - 1000);
      }
      expect(list[0]!.timestampMillis).toBeGreaterThanOrEqual(list[1]!.timestampMillis);
      const limited = (await events({ limit: 1 })).body.data!.test as typeof answer;
      expect(limited.batchRunEvents.batchRunEvents).toEqual([list[0]]);
      const earlier = (await events({ endTimeMillis: before - 1 })).body.data!.test as typeof answer;
      expect(earlier.batchRunEvents.batchRunEvents).toEqual([]);
    });

    it("counts a scheduled firing's run among the test's runs", async () => {
      const urn = await createTest("ui-scheduled", HAS_DESCRIPTION, { schedule: { cron: "0 3 * * *" } });
      const logger = createLogger("tests-ui-test", ui.gateway.config.LOG_LEVEL);
      const connection = createRedis(ui.gateway.config.REDIS_URL, "producer");
      const rateLimits = new RateLimits(RateLimits.connect(ui.gateway.config, logger), ui.gateway.config);
      const runs = new Producer("evaluate", connection, ui.gateway.config.QUEUE_PREFIX);
      const truncations = new Producer("truncate", connection, ui.gateway.config.QUEUE_PREFIX);
      const syncQueue = new Producer("scheduleSync", connection, ui.gateway.config.QUEUE_PREFIX);
      try {
        // The workers' own firing runner, as the schedule's job runs it; the worker of this file runs the task.
        const fired = (await fireSchedule(scheduledTestKind, urn, {
          db: ui.gateway.database,
          tasks: new TaskLifecycle(ui.gateway.database, logger),
          producers: { evaluate: runs, truncate: truncations },
          sync: new ScheduleSyncRequests(syncQueue),
          logger,
          urnNamespace: ui.gateway.config.URN_NAMESPACE,
          rootUserUrn: ui.gateway.config.ROOT_USER_URN,
          rateLimits,
        })) as { taskId: string };
        await eventually(
          `scheduled run ${fired.taskId} completed`,
          async () =>
            (await ui.gateway.post("/gms/operations?action=getTaskStatus", { taskId: fired.taskId }, asRoot)).body
              .value as {
              state: string;
            },
          { timeoutMs: 20_000, until: (status) => status.state === "completed" },
        );
      } finally {
        await Promise.all([runs.close(), truncations.close(), syncQueue.close()]);
        await rateLimits.close();
        await closeRedis(connection);
      }
      const events = await ui.gateway.graphql(UI.getTestRunEvents!, { urn }, frontend(VIEWER));
      expect(events.body.data).toEqual({
        test: {
          urn,
          batchRunEvents: {
            batchRunEvents: [
              {
                timestampMillis: expect.any(Number),
                status: "COMPLETE",
                result: { passingCount: 2, failingCount: 1 },
              },
            ],
          },
        },
      });
    });

    it("refuses a limit or a window past its bounds, naming them", async () => {
      const urn = await createTest("ui-bounds", HAS_DESCRIPTION);
      const refused = async (variables: Record<string, unknown>) =>
        (await ui.gateway.graphql(UI.getTestRunEvents!, { urn, ...variables }, asRoot)).body.errors?.[0];
      expect(await refused({ limit: 101 })).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: "limit must be between 1 and 100",
      });
      expect(await refused({ startTimeMillis: 2_000, endTimeMillis: 1_000 })).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: expect.stringContaining("startTimeMillis must not be after endTimeMillis"),
      });
      expect(await refused({ startTimeMillis: 0, endTimeMillis: 91 * 86_400_000 })).toMatchObject({
        extensions: { code: "BAD_USER_INPUT" },
        message: expect.stringContaining("more than the limit of 90"),
      });
    });
  });
});
