/**
 * The result history (test-result-history.ts) in one worker, no gateway: each push records a pair's result only when
 * it changes, the pair keeps its newest TEST_HISTORY_MAX_TRANSITIONS, and retention prunes by age, keeping the latest
 * of each live test (since when it passes or fails) and nothing of a deleted one. testResultHistory's answers are tested
 * through the gateway (services/gateway/test/scheduled-tests.int.spec.ts).
 */
import { AspectRepository, inTransaction, ownerPrivilegesReader } from "@mdp/db";
import { ResultsPusher } from "../src/results.pusher";
import { TestHistoryRetention, TestResultHistory } from "../src/test-result-history";
import { workerTest, type WorkerFixture } from "./support/worker-fixture";

const ROOT = "urn:li:corpuser:admin";
const ORDERS = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
const DAY = 86_400_000;

/** The pair's transitions, newest first: [passing, when]. */
const transitions = async (w: WorkerFixture, testUrn: string) =>
  (
    await w.database.pool.query<{ passing: boolean; at: Date }>(
      "SELECT passing, at FROM test_result_transition WHERE urn = $1 AND test_urn = $2 ORDER BY at DESC",
      [ORDERS, testUrn],
    )
  ).rows.map((t) => [t.passing, t.at.getTime()]);

describe("result history, in the worker", () => {
  workerTest("caps each pair's history and prunes it by age, keeping the latest of each live test", async (w) => {
    await w.ingest(ORDERS, "datasetProperties", { description: "orders" });
    const live = await w.createTest(
      "capped",
      { on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } },
      ROOT,
      { evaluateOnChange: false },
    );
    const gone = "urn:li:test:deleted-long-ago";
    const pusher = new ResultsPusher(
      new AspectRepository(),
      ownerPrivilegesReader(w.database.prisma, w.config.ROOT_USER_URN),
      new TestResultHistory(2),
    );
    const push = (passing: boolean, evaluatedAt: number) =>
      inTransaction(w.database.pool, (client) =>
        pusher.push(client, [
          {
            entityType: "dataset",
            actorUrn: ROOT,
            evaluated: new Set([live]),
            evaluation: {
              urn: ORDERS,
              passing: passing ? [{ test: live, type: "SUCCESS" as const }] : [],
              failing: passing ? [] : [{ test: live, type: "FAILURE" as const, failedRules: [] }],
              notApplicable: [],
              evaluatedAt,
            },
          },
        ]),
      );
    const t0 = Date.now() - 10 * DAY;
    await push(true, t0);
    await push(true, t0 + 1000); // the same state: nothing recorded
    await push(false, t0 + 2000);
    await push(true, t0 + 3000);
    // Three transitions happened; the cap keeps the newest two.
    expect(await transitions(w, live)).toEqual([
      [true, t0 + 3000],
      [false, t0 + 2000],
    ]);

    await w.database.pool.query(
      `INSERT INTO test_result_transition (urn, test_urn, passing, previous, at)
       VALUES ($1, $2, false, NULL, now() - interval '9 days'), ($1, $2, true, false, now() - interval '8 days')`,
      [ORDERS, gone],
    );
    // Retention of 5 days: the live pair keeps its latest row (since when it passes), the deleted test loses all.
    const deleted = await new TestHistoryRetention(w.database.pool, 5).prune();
    expect(deleted).toBe(3);
    expect(await transitions(w, live)).toEqual([[true, t0 + 3000]]);
    expect(await transitions(w, gone)).toEqual([]);
  });
});
