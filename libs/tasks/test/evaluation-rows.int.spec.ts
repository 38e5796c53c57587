/**
 * The task rows of an evaluate job's requests (real PostgreSQL): one row the database refuses does not cost the job's
 * other requests theirs.
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
});
