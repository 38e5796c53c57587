/**
 * The task rows of an evaluate job's requests (real PostgreSQL): one row the database refuses does not cost the job's
 * other requests theirs; a row keeps the reply sent as it was, and the ended rows are read back for a gateway whose
 * reply went missing.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { EvaluationTasks, type EvaluationRow } from "../src";

describe("EvaluationTasks.record", () => {
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

  const row = (taskId: string): EvaluationRow => ({
    taskId,
    state: "completed",
    request: { kind: "evaluate", urns: ["urn:li:dataset:x"], push: false },
    createdBy: "urn:li:corpuser:admin",
    createdAt: new Date(),
    startedAt: new Date(),
    attemptsMade: 1,
    progress: { evaluated: 1, total: 1, passing: 1, failing: 0, notApplicable: 0, percent: 100 },
    result: { results: {} },
  });

  it("writes the others when PostgreSQL refuses one row, then reports the refusal", async () => {
    // Stands for any row the database refuses that validation let through.
    await database.pool.query(`
      CREATE FUNCTION refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
      CREATE TRIGGER refuse_poisoned BEFORE INSERT ON task
        FOR EACH ROW WHEN (NEW.id = 'poisoned') EXECUTE FUNCTION refuse_poisoned()`);
    const rows = new EvaluationTasks(database.pool, { owner: "test", leaseMs: 10_000 });
    await expect(rows.record([row("first"), row("poisoned"), row("last")])).rejects.toThrow("refused by the test");
    const { rows: stored } = await database.pool.query<{ id: string; state: string }>(
      "SELECT id, state FROM task ORDER BY id",
    );
    expect(stored).toEqual([
      { id: "first", state: "completed" },
      { id: "last", state: "completed" },
    ]);
  });

  it("keeps a reply's text as sent, and reads the ended rows among any ids in one statement", async () => {
    const rows = new EvaluationTasks(database.pool, { owner: "test", leaseMs: 10_000 });
    // Key order jsonb would not keep for an object: the reply's results travel as text, and stay so.
    const text = '{"urn":"urn:li:dataset:x","notApplicable":[],"passing":[],"failing":[],"evaluatedAt":1}';
    const reply = { resultsJson: { "urn:li:dataset:x": text }, evaluationMs: 3 };
    await rows.record([{ ...row("kept"), reply }, { ...row("running"), state: "active" }, row("unkept")]);
    const answers = await rows.storedAnswers(["kept", "running", "unkept", "absent"]);
    expect(answers.sort((a, b) => a.taskId.localeCompare(b.taskId))).toEqual([
      { taskId: "kept", state: "completed", reply, result: { results: {} }, failedReason: null },
      { taskId: "unkept", state: "completed", reply: null, result: { results: {} }, failedReason: null },
    ]);
    expect(await rows.storedAnswers([])).toEqual([]);
  });
});
