/**
 * Pushed results against the real gateway, a real BullMQ evaluation worker in process, real PostgreSQL: stored as
 * testResults merged with other tests' results, read back over GraphQL, a push serialized behind another in flight for
 * the same entity, many concurrent pushes losing nothing, and the results of deleted or retyped tests dropped from every
 * read at once and from the stored aspect at the next push.
 */
import { eventually } from "@mdp/core/testing";
import { AspectRepository, inTransaction } from "@mdp/db";
import {
  DELETE,
  HAS_DESCRIPTION,
  HAS_OWNER,
  HIVE_TAGGED,
  KAFKA,
  NOBODY,
  RESULTS,
  UPDATE,
  VIEWER,
  aspect,
  metadataTestsSetup,
} from "./support/metadata-tests";
import { ROOT, type Harness } from "./support/gateway-harness";

describe("metadata tests", () => {
  const { ctx, gql, createTest, ingest, evaluate, evaluation, storedResults, rawTestResults } = metadataTestsSetup([
    ["described", HAS_DESCRIPTION],
    ["owned", HAS_OWNER],
    ["hive-tagged", HIVE_TAGGED],
  ]);
  let h: Harness;
  beforeAll(() => {
    h = ctx.h;
  });

  describe("pushed results", () => {
    const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.pushed,PROD)";
    beforeAll(async () => {
      await ingest([aspect(DATASET, "datasetProperties", { description: "orders pushed" })]);
    });

    it("stores results as testResults, merged with earlier results of other tests, readable afterwards", async () => {
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:described"] });
      expect(await storedResults(DATASET)).toEqual({
        passing: [{ test: "urn:li:test:described", type: "SUCCESS" }],
        failing: [],
      });
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:owned"] });
      const stored = (await storedResults(DATASET)) as { passing: unknown[]; failing: Array<{ test: string }> };
      expect(stored.passing).toEqual([{ test: "urn:li:test:described", type: "SUCCESS" }]);
      expect(stored.failing.map((f) => f.test)).toEqual(["urn:li:test:owned"]);
      const body = await gql(RESULTS, { urn: DATASET }, VIEWER);
      expect(body.data?.testResults).toEqual({
        passing: [{ type: "SUCCESS", test: { urn: "urn:li:test:described", name: "test described" } }],
        failing: [
          {
            type: "FAILURE",
            test: { urn: "urn:li:test:owned" },
            failedRules: [
              expect.objectContaining({ path: "rules.and[0]", property: "ownership.owners.owner", actual: [] }),
              expect.objectContaining({ path: "rules.and[1]" }),
            ],
          },
        ],
      });
      // The same outcome again writes no new version.
      const versions = () => h.prisma.aspect.count({ where: { urn: DATASET, aspectName: "testResults" } });
      const count = await versions();
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:owned"] });
      expect(await versions()).toBe(count);
    });

    it("answers null for an entity without results and NOT_FOUND for an unknown one", async () => {
      expect((await gql(RESULTS, { urn: KAFKA })).data).toEqual({ testResults: null });
      expect((await gql(RESULTS, { urn: "urn:li:chart:none" })).errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
      expect((await gql(RESULTS, { urn: KAFKA }, NOBODY)).errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    });

    it("serializes a push behind another one in flight for the same entity, so neither result is lost", async () => {
      const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.interleaved,PROD)";
      await ingest([aspect(target, "datasetProperties", { description: "interleaved" })]);
      const aspects = new AspectRepository();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      // Another push, mid-flight: it holds the aspect's lock and has written, but not yet committed, its result.
      const other = inTransaction(h.database.pool, async (client) => {
        await aspects.lock(client, [{ urn: target, aspectName: "testResults" }]);
        const value = { passing: [{ test: "urn:li:test:owned", type: "SUCCESS" }], failing: [] };
        await aspects.upsert(
          client,
          [{ urn: target, entityType: "dataset", aspectName: "testResults", valueJson: JSON.stringify(value) }],
          ROOT,
        );
        locked();
        await released;
      });
      await lockTaken;
      let answered = false;
      const push = evaluate({ urn: target, push: true, testUrns: ["urn:li:test:described"] }).then((res) => {
        answered = true;
        return res;
      });
      // Its push has reached the lock the other one holds (a session of this database waits on a lock) ...
      await eventually("the evaluation's push waiting on the lock", async () => {
        const waiting = await h.database.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      expect(answered).toBe(false); // ... and waits there, before reading what is stored
      release();
      await other;
      expect((await push).status).toBe(200);
      expect(await storedResults(target)).toEqual({
        passing: [
          { test: "urn:li:test:described", type: "SUCCESS" },
          { test: "urn:li:test:owned", type: "SUCCESS" },
        ],
        failing: [],
      });
    });

    it("loses nothing when many pushes for one entity run at once", async () => {
      const target = "urn:li:dataset:(urn:li:dataPlatform:hive,db.contended,PROD)";
      await ingest([aspect(target, "datasetProperties", { description: "contended" })]);
      const urns = await Promise.all(
        Array.from({ length: 12 }, (_, i) => createTest(`parallel-${i}`, HAS_DESCRIPTION)),
      );
      // Several rounds: each round's pushes race one another in the worker (concurrency 4) and in PostgreSQL.
      for (let round = 0; round < 3; round++) {
        const responses = await Promise.all(urns.map((urn) => evaluate({ urn: target, push: true, testUrns: [urn] })));
        expect(responses.map((r) => r.status)).toEqual(urns.map(() => 200));
      }
      const stored = (await storedResults(target)) as { passing: Array<{ test: string }> };
      expect(stored.passing.map((p) => p.test).sort()).toEqual([...urns].sort());
      for (const urn of urns) await gql(DELETE, { urn });
    });

    it("drops results of a test that was deleted, or that no longer applies: from every read at once, stored at the next push", async () => {
      const doomed = await createTest("doomed", HAS_DESCRIPTION);
      await evaluation({ urn: DATASET, push: true, testUrns: [doomed] });
      expect(JSON.stringify(await storedResults(DATASET))).toContain(doomed);
      await gql(DELETE, { urn: doomed });
      // Hidden at once from testResults and from the entity's aspects, and gone from the stored aspect at the next push.
      const shown = (await gql(RESULTS, { urn: DATASET })).data?.testResults as {
        passing: Array<{ test: { urn: string } }>;
      };
      expect(shown.passing.map((p) => p.test.urn)).toEqual(["urn:li:test:described"]);
      const read = (await storedResults(DATASET)) as { passing: Array<{ test: string }> };
      expect(read.passing.map((p) => p.test)).toEqual(["urn:li:test:described"]);
      expect(JSON.stringify(await rawTestResults(DATASET))).toContain(doomed);
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:hive-tagged"] });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain(doomed);
      // hive-tagged failed on this hive dataset; a kafka-only condition makes it not apply, so its result goes.
      await gql(UPDATE, {
        urn: "urn:li:test:hive-tagged",
        input: {
          name: "hive tagged",
          category: "x",
          definition: { json: HIVE_TAGGED.replace("urn:li:dataPlatform:hive", "urn:li:dataPlatform:kafka") },
        },
      });
      await evaluation({ urn: DATASET, push: true, testUrns: ["urn:li:test:hive-tagged"] });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain("hive-tagged");
      await gql(UPDATE, {
        urn: "urn:li:test:hive-tagged",
        input: { name: "hive tagged", category: "x", definition: { json: HIVE_TAGGED } },
      });
    });

    it("drops results of a test edited to select other entity types: from every read at once, stored at the next push", async () => {
      const retyped = await createTest("retyped", HAS_DESCRIPTION);
      await evaluation({ urn: DATASET, push: true, testUrns: [retyped] });
      expect(JSON.stringify(await storedResults(DATASET))).toContain(retyped);
      await gql(UPDATE, {
        urn: retyped,
        input: {
          name: "retyped",
          category: "x",
          definition: { json: HAS_DESCRIPTION.replace("[dataset]", "[chart]") },
        },
      });
      const shown = (await gql(RESULTS, { urn: DATASET })).data?.testResults as {
        passing: Array<{ test: { urn: string } }>;
      };
      expect(shown.passing.map((p) => p.test.urn)).not.toContain(retyped);
      expect(JSON.stringify(await storedResults(DATASET))).not.toContain(retyped);
      expect(JSON.stringify(await rawTestResults(DATASET))).toContain(retyped);
      // Without testUrns the edited test no longer runs on this dataset, so nothing else would ever remove its entry.
      await evaluation({ urn: DATASET, push: true });
      expect(JSON.stringify(await rawTestResults(DATASET))).not.toContain(retyped);
      await gql(DELETE, { urn: retyped });
    });
  });
});
