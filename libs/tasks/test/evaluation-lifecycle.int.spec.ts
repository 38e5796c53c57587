/**
 * The task rows of an evaluate job's requests (real PostgreSQL), through their lifecycle: a request ends completed or
 * failed with its refusal; a failed attempt waits for the retry and the last one ends failed; an ended row is not
 * changed again; one row the database refuses does not cost the job's other requests theirs; a row keeps the reply
 * sent as it was, and the ended rows are read back for a gateway whose reply went missing.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { EvaluationLifecycle, type EvaluationEnding, type EvaluationRecord } from "../src";

describe("EvaluationLifecycle", () => {
  let db: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    db = await createTestDatabase("task_rows");
    database = createDatabase(db.url);
  });
  afterAll(async () => {
    await database.close();
    await db.drop();
  });

  const record = (taskId: string): EvaluationRecord => ({
    taskId,
    request: { kind: "evaluate", urns: ["urn:li:dataset:x"], push: false },
    createdBy: "urn:li:corpuser:admin",
    createdAt: new Date(),
    startedAt: new Date(),
    attemptsMade: 1,
    progress: { evaluated: 1, total: 1, passing: 1, failing: 0, notApplicable: 0, percent: 100 },
  });
  const row = (taskId: string): EvaluationEnding => ({ ...record(taskId), result: { results: {} } });
  const stateOf = async (taskId: string) =>
    (
      await database.pool.query<{ state: string; failed_reason: string | null }>(
        "SELECT state, failed_reason FROM task WHERE id = $1",
        [taskId],
      )
    ).rows[0];

  it("ends a request completed, or failed with its refusal; an ended row is not changed again", async () => {
    const rows = new EvaluationLifecycle(database.pool, { owner: "test", leaseMs: 10_000 });
    await rows.end([row("answered"), { ...record("refused"), refusal: "Entity urn:li:dataset:x not found" }]);
    expect(await stateOf("answered")).toEqual({ state: "completed", failed_reason: null });
    expect(await stateOf("refused")).toEqual({ state: "failed", failed_reason: "Entity urn:li:dataset:x not found" });
    await rows.end([{ ...record("answered"), refusal: "a late duplicate" }]);
    expect(await stateOf("answered")).toEqual({ state: "completed", failed_reason: null });
  });

  it("a failed attempt waits for BullMQ's retry; the last attempt ends the row failed", async () => {
    const rows = new EvaluationLifecycle(database.pool, { owner: "test", leaseMs: 10_000 });
    const first = rows.failedAttempt({ attemptsMade: 0, opts: { attempts: 2 } }, new Error("boom"));
    expect(first).toEqual({ final: false, failedReason: "Attempt 1 failed, retrying: boom" });
    await rows.failAttempt([record("retried")], first);
    expect(await stateOf("retried")).toEqual({ state: "waiting", failed_reason: first.failedReason });
    // An outage's own words are kept: the gateway waiting for the job reads them as a 503.
    const outage = new Error("Connection terminated unexpectedly");
    const last = rows.failedAttempt({ attemptsMade: 1, opts: { attempts: 2 } }, outage);
    expect(last).toEqual({ final: true, failedReason: "Connection terminated unexpectedly" });
    await rows.failAttempt([record("retried")], last);
    expect(await stateOf("retried")).toEqual({ state: "failed", failed_reason: last.failedReason });
  });

  it("writes the others when PostgreSQL refuses one row, then reports the refusal", async () => {
    // Stands for any row the database refuses that validation let through.
    await database.pool.query(`
      CREATE FUNCTION refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
      CREATE TRIGGER refuse_poisoned BEFORE INSERT ON task
        FOR EACH ROW WHEN (NEW.id = 'poisoned') EXECUTE FUNCTION refuse_poisoned()`);
    const rows = new EvaluationLifecycle(database.pool, { owner: "test", leaseMs: 10_000 });
    await expect(rows.end([row("first"), row("poisoned"), row("last")])).rejects.toThrow("refused by the test");
    const { rows: stored } = await database.pool.query<{ id: string; state: string }>(
      "SELECT id, state FROM task WHERE id IN ('first', 'poisoned', 'last') ORDER BY id",
    );
    expect(stored).toEqual([
      { id: "first", state: "completed" },
      { id: "last", state: "completed" },
    ]);
  });

  it("keeps a reply's text as sent, and reads the ended rows among any ids in one statement", async () => {
    const rows = new EvaluationLifecycle(database.pool, { owner: "test", leaseMs: 10_000 });
    // Key order jsonb would not keep for an object: the reply's results travel as text, and stay so.
    const text = '{"urn":"urn:li:dataset:x","notApplicable":[],"passing":[],"failing":[],"evaluatedAt":1}';
    const reply = { resultsJson: { "urn:li:dataset:x": text }, evaluationMs: 3 };
    expect(await rows.claimForPush(database.pool, [record("running")])).toEqual(new Set());
    await rows.end([{ ...row("kept"), reply }, row("unkept")]);
    const answers = await rows.storedAnswers(["kept", "running", "unkept", "absent"]);
    expect(answers.sort((a, b) => a.taskId.localeCompare(b.taskId))).toEqual([
      { taskId: "kept", state: "completed", reply, result: { results: {} }, failedReason: null },
      { taskId: "unkept", state: "completed", reply: null, result: { results: {} }, failedReason: null },
    ]);
    expect(await rows.storedAnswers([])).toEqual([]);
  });
});
