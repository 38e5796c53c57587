/**
 * Evaluation on change (docs/evaluation-on-change.md) in one worker, no gateway: an aspect written with its outbox
 * event has the tests that select the entity pushed by themselves, written for the test's owner; rapid changes to one
 * entity coalesce into one evaluation; a burst is worked through a bounded batch at a time; a change committed before
 * a worker died is evaluated by the next one; what tests' actions wrote is not evaluated again; the runs a test's edits
 * start count against its owner's runTest limit; a test whose owner lost MANAGE_TESTS is suspended and pushes nothing.
 * What the gateway decides (who owns a test, when an update writes its event) is tested through it, in
 * services/gateway/test/evaluation-on-change.int.spec.ts.
 */
import { eventually } from "@mdp/core/testing";
import { deletePolicy, findTest, inTransaction, sequencePlatformEvents } from "@mdp/db";
import { ON_CHANGE_CONSUMER } from "../src/on-change-settings";
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const MANAGER = "urn:li:corpuser:onchange-manager";
const INGESTER = "urn:li:corpuser:onchange-ingester";
const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.${name},PROD)`;
const DESCRIBED = {
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "contains_str", value: "orders" },
};

const describeAs = (w: WorkerFixture, urn: string, description: string) =>
  w.ingest(urn, "datasetProperties", { description }, INGESTER);
/** The test's first run (started by its creation) has ended: nothing but evaluation on change pushes it from now on. */
const runEnded = (w: WorkerFixture, testUrn: string) =>
  eventually("the new test's run ends", () => w.runsOf(testUrn), {
    until: (runs) => runs.length === 1 && runs[0]!.state === "completed",
    timeoutMs: 30_000,
  });
/** MANAGER's on-change test, its first run (over nothing yet) ended: what each test starts from. */
async function onChangeTest(w: WorkerFixture): Promise<string> {
  await w.grant(MANAGER, ["MANAGE_TESTS", "VIEW_TESTS"]);
  const urn = await w.createTest("on-change", DESCRIBED, MANAGER);
  await w.settle();
  await runEnded(w, urn);
  return urn;
}

describe("evaluation on change, in the worker", () => {
  workerTest("pushes the results of a change by itself, written for the test's owner, not the writer", async (w) => {
    const onTest = await onChangeTest(w);
    const orders = dataset("orders");
    w.startOnChange(50);
    await describeAs(w, orders, "All orders");
    await eventually("the change's result is pushed", () => w.resultOf(orders, onTest), {
      until: (r) => r === "passing",
    });
    expect((await w.latest(orders, "testResults"))?.createdBy).toBe(MANAGER);
    await describeAs(w, orders, "nothing to see");
    await eventually("the next change's result is pushed", () => w.resultOf(orders, onTest), {
      until: (r) => r === "failing",
    });
  });

  workerTest("coalesces rapid changes to one entity into one evaluation of its latest state", async (w) => {
    const onTest = await onChangeTest(w);
    const customers = dataset("customers");
    await describeAs(w, customers, "no");
    await w.settle();
    const versionBefore = (await w.latest(customers, "testResults"))!.version;
    for (const description of ["a", "b", "c", "d", "orders of customers"]) await describeAs(w, customers, description);
    // Five changes (and the push's own testResults event, which evaluates nothing): one evaluation, one new version.
    const done = await w.settle();
    expect(done).toMatchObject({ entities: 1, pushed: 1 });
    expect(done.events).toBeGreaterThanOrEqual(5);
    expect(await w.resultOf(customers, onTest)).toBe("passing");
    expect((await w.latest(customers, "testResults"))!.version).toBe(versionBefore + 1);
  });

  workerTest(
    "queues a burst: each pass takes a bounded batch of events, and the rest wait for the next, none lost",
    async (w) => {
      const onTest = await onChangeTest(w);
      const burst = Array.from({ length: 7 }, (_, i) => dataset(`burst${i}`));
      for (const urn of burst) await describeAs(w, urn, "orders");
      expect(await w.onChange.pass()).toMatchObject({ events: 3, entities: 3 });
      expect(await w.resultOf(burst[3]!, onTest)).toBeUndefined();
      expect(await w.settle()).toMatchObject({ entities: 4 });
      for (const urn of burst) expect(await w.resultOf(urn, onTest)).toBe("passing");
    },
    { onChange: { batchSize: 3 } },
  );

  workerTest(
    "passes over pushed results in PostgreSQL, and reads on at once past a window of nothing but them",
    async (w) => {
      const onTest = await onChangeTest(w);
      // A run's pushes: more testResults events than ten passes' windows (a batch of 2, one partition: 8 positions)
      // would read were they counted against the batch, then one change behind them.
      for (let i = 0; i < 30; i++) await w.ingest(dataset(`pushed${i}`), "testResults", { passing: [], failing: [] });
      const behind = dataset("behind");
      await describeAs(w, behind, "orders");
      await inTransaction(w.database.pool, (client) => sequencePlatformEvents(client, 10_000));
      // One drain: only the change is read (the pushed results never reach the worker), none of it waits for a poll.
      expect(await w.onChange.drain()).toMatchObject({ events: 1, entities: 1, pushed: 1 });
      expect(await w.resultOf(behind, onTest)).toBe("passing");
    },
    { onChange: { batchSize: 2 } },
  );

  workerTest(
    "reads on at once while the sequencer still numbers a burst, though what it numbered is all passed over",
    async (w) => {
      const onTest = await onChangeTest(w);
      // Twelve pushed results, then a change: the sequencer numbers two a pass, none of the first six passes' is read.
      for (let i = 0; i < 12; i++)
        await w.ingest(dataset(`unnumbered${i}`), "testResults", { passing: [], failing: [] });
      const behind = dataset("behind-unnumbered");
      await describeAs(w, behind, "orders");
      expect(await w.onChange.drain()).toMatchObject({ events: 1, entities: 1, pushed: 1 });
      expect(await w.resultOf(behind, onTest)).toBe("passing");
    },
    { onChange: { batchSize: 2 } },
  );

  workerTest("evaluates a change committed before its worker died, once a worker is back", async (w) => {
    const onTest = await onChangeTest(w);
    const refunds = dataset("refunds");
    // This worker dies in the pass, after evaluating and before its commit (a test edit in the same pass needs it to
    // start a run, and it cannot).
    const dying = w.newOnChange({ startRun: () => Promise.reject(new Error("the worker died")) });
    try {
      await describeAs(w, refunds, "orders refunded");
      const edited = await w.createTest("edited-meanwhile", DESCRIBED, MANAGER);
      await expect(dying.pass()).rejects.toThrow("the worker died");
      expect(await w.resultOf(refunds, onTest)).toBeUndefined();
      expect(await w.runsOf(edited)).toEqual([]);
    } finally {
      await dying.close();
    }
    const restarted = w.newOnChange();
    try {
      expect(await w.settle(restarted)).toMatchObject({ entities: 1, pushed: 1, runs: 1 });
      expect(await w.resultOf(refunds, onTest)).toBe("passing");
    } finally {
      await restarted.close();
    }
  });

  workerTest("does not evaluate again on what tests' actions wrote: actions that undo each other settle", async (w) => {
    // Failing without the tag adds it; passing with it removes it: each push undoes the last. Evaluating again on the
    // actions' own writes would rewrite the entity at every pass, forever.
    await w.grant(MANAGER, ["MANAGE_TESTS", "VIEW_TESTS", "EDIT_ENTITY_TAGS"]);
    const flipper = await w.createTest(
      "flipper",
      {
        on: { types: ["dataset"] },
        rules: { property: "globalTags.tags.tag", operator: "contains_any", values: ["urn:li:tag:flip"] },
        actions: {
          passing: [{ type: "REMOVE_TAGS", values: ["urn:li:tag:flip"] }],
          failing: [{ type: "ADD_TAGS", values: ["urn:li:tag:flip"] }],
        },
      },
      MANAGER,
    );
    await w.settle();
    await runEnded(w, flipper);
    const flipped = dataset("flipped");
    await describeAs(w, flipped, "a new dataset");
    for (let pass = 0; pass < 6; pass++) await w.onChange.pass();
    // One push: failing, the tag added; the write of the tag evaluated nothing again.
    expect(await w.resultOf(flipped, flipper)).toBe("failing");
    expect((await w.latest(flipped, "globalTags"))?.version).toBe(1);
    expect(await w.settle()).toMatchObject({ entities: 0 });
  });

  workerTest(
    "counts the runs a test's edits start against its owner's runTest limit: past it, none (audited)",
    async (w) => {
      const EDITOR = "urn:li:corpuser:onchange-editor";
      await w.grant(EDITOR, ["MANAGE_TESTS", "VIEW_TESTS"]);
      const edited = await w.createTest("edited-often", DESCRIBED, EDITOR);
      // Each edit a definition of its own (its own run); the owner's limit is RATE_LIMIT_TEST_RUNS_PER_MINUTE (10).
      for (let i = 0; i < 11; i++) {
        const rules = { property: "datasetProperties.description", operator: "contains_str", value: `edit-${i}` };
        await w.editTest(edited, { on: { types: ["dataset"] }, rules }, EDITOR);
        await w.settle(); // each edit read in a pass of its own (edits read in one pass start one run)
      }
      const limited = await w.database.prisma.auditEvent.findMany({
        where: { action: "test.run.rateLimited", targetUrn: edited },
      });
      expect(limited.length).toBeGreaterThanOrEqual(1);
      expect(limited[0]).toMatchObject({ actorUrn: EDITOR, details: expect.objectContaining({ trigger: "change" }) });
      expect((await w.runsOf(edited)).length).toBeLessThanOrEqual(w.config.RATE_LIMIT_TEST_RUNS_PER_MINUTE);
    },
  );

  workerTest("suspends a test whose owner lost MANAGE_TESTS, and pushes nothing for it", async (w) => {
    const LEAVER = "urn:li:corpuser:onchange-leaver";
    const onTest = await onChangeTest(w);
    const policy = await w.grant(LEAVER, ["MANAGE_TESTS"]);
    const leavers = await w.createTest("leavers", DESCRIBED, LEAVER);
    await w.settle();
    await runEnded(w, leavers);
    await deletePolicy(w.database.prisma, policy);

    const returns = dataset("returns");
    await describeAs(w, returns, "orders returned");
    expect(await w.settle()).toMatchObject({ entities: 1, refused: 1 });
    expect(await w.resultOf(returns, onTest)).toBe("passing");
    expect(await w.resultOf(returns, leavers)).toBeUndefined();
    const test = await findTest(w.database.prisma, leavers);
    expect(test?.suspendedAt).toEqual(expect.any(Date));
    expect(test?.suspendedReason).toContain("MANAGE_TESTS");
    const audited = await w.database.prisma.auditEvent.findMany({
      where: { action: "test.onChange.suspended", targetUrn: leavers },
    });
    expect(audited).toEqual([expect.objectContaining({ actorUrn: LEAVER })]);
    // Suspended, it is left out from then on: no second audit row, still nothing pushed.
    await describeAs(w, returns, "orders returned again");
    expect(await w.settle()).toMatchObject({ entities: 1, refused: 0 });
    expect(await w.resultOf(returns, leavers)).toBeUndefined();
  });
  workerTest(
    "a push whose partition another worker took over before it committed lands nothing; the new holder's does",
    async (w) => {
      const onTest = await onChangeTest(w);
      await w.onChange.close(); // the fixture's holder lets go: the two below hold the partition in turn
      const handedOver = dataset("handed-over");
      const partitionRow = async () =>
        (
          await w.database.pool.query<{ holder: string; seq: string }>(
            "SELECT holder, seq::text AS seq FROM platform_event_partition WHERE consumer = $1",
            [ON_CHANGE_CONSUMER],
          )
        ).rows[0]!;
      // Worker b takes the partition over (a's lease lapsed, say) while a's push of its evaluation is in flight.
      const slow: WorkerFixture["pusher"] = Object.create(w.pusher);
      slow.push = async (client, items) => {
        await w.database.pool.query(
          "UPDATE platform_event_partition SET holder = 'test:b', lease_until = now() + interval '1 minute' WHERE consumer = $1",
          [ON_CHANGE_CONSUMER],
        );
        return w.pusher.push(client, items);
      };
      const a = w.newOnChange({ holder: "test:a" }, { pusher: slow });
      const b = w.newOnChange({ holder: "test:b" });
      try {
        await describeAs(w, handedOver, "All orders");
        const before = await partitionRow();
        await a.pass();
        expect(await w.resultOf(handedOver, onTest)).toBeUndefined();
        expect(await partitionRow()).toEqual({ holder: "test:b", seq: before.seq });
        await w.settle(b);
        expect(await w.resultOf(handedOver, onTest)).toBe("passing");
      } finally {
        await a.close();
        await b.close();
      }
    },
  );
});
